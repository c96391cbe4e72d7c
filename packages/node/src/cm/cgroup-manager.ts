import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '@kubelet-kit/core';
import { cpuSharesToCpuWeight, type ResourceConfig } from './helpers.js';

// Upstream pkg/kubelet/cm/cgroup_manager_linux.go (and cgroup_v1/v2_manager_linux.go): cgroups
// named driver-neutrally, laid out by the cgroupfs or systemd driver, written through the files
// of cgroup v1 or v2. Files are written directly (the systemd driver too: no D-Bus here).

/** A cgroup's name, driver-neutral: its components from the root (upstream `CgroupName`). @internal */
export type CgroupName = readonly string[];

/** `--cgroup-driver`. @internal */
export type CgroupDriver = 'cgroupfs' | 'systemd';

const systemdSuffix = '.slice';

/** Upstream `escapeSystemdCgroupName`: a dash separates slice levels, so it becomes `_`. */
function escapeSystemd(part: string): string {
  return part.replaceAll('-', '_');
}

/**
 * Upstream `CgroupName.ToSystemd`: the nested slices' path,
 * e.g. `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice`.
 *
 * @internal
 */
export function toSystemd(name: CgroupName): string {
  if (name.length === 0 || (name.length === 1 && name[0] === '')) return '/';
  let prefix = '';
  const out: string[] = [];
  for (const part of name) {
    const unit = prefix === '' ? escapeSystemd(part) : `${prefix}-${escapeSystemd(part)}`;
    out.push(`${unit}${systemdSuffix}`);
    prefix = unit;
  }
  return `/${out.join('/')}`;
}

/** Upstream `CgroupName.ToCgroupfs`. @internal */
export function toCgroupfs(name: CgroupName): string {
  return `/${name.join('/')}`;
}

/** Upstream `ParseCgroupfsToCgroupName`: `--cgroup-root` as a name. @internal */
export function parseCgroupfsToCgroupName(p: string): CgroupName {
  return p.split('/').filter((c) => c !== '');
}

/** The hierarchy's version: v2 when the root has `cgroup.controllers` (upstream `IsCgroup2UnifiedMode`). @internal */
export function detectCgroupVersion(mountPoint: string): 1 | 2 {
  return fs.existsSync(path.join(mountPoint, 'cgroup.controllers')) ? 2 : 1;
}

/** Options of {@link CgroupManager}. @internal */
export interface CgroupManagerOptions {
  readonly driver: CgroupDriver;
  /** Default /sys/fs/cgroup; a temp directory in tests. */
  readonly mountPoint?: string;
  /** Default detected from the mount point. */
  readonly version?: 1 | 2;
  readonly logger: Logger;
}

/** The v1 controllers pod cgroups are made in (cpuset and the rest are left to the runtime). */
const v1Subsystems = ['cpu', 'cpuacct', 'memory', 'pids', 'hugetlb', 'freezer'] as const;
/** What v2 parents enable for their children. */
const v2Controllers = ['cpu', 'memory', 'pids'] as const;

/**
 * Makes, updates, reads and removes cgroups (upstream `CgroupManager`).
 *
 * @internal
 */
export class CgroupManager {
  readonly driver: CgroupDriver;
  readonly version: 1 | 2;
  readonly mountPoint: string;
  readonly #log: Logger;

  constructor(o: CgroupManagerOptions) {
    this.driver = o.driver;
    this.mountPoint = o.mountPoint ?? '/sys/fs/cgroup';
    this.version = o.version ?? detectCgroupVersion(this.mountPoint);
    this.#log = o.logger;
  }

  /** The name as the runtime is given it (upstream `Name`): a cgroupfs path or the slice's name. */
  name(name: CgroupName): string {
    if (this.driver === 'systemd') return path.posix.basename(toSystemd(name));
    return toCgroupfs(name);
  }

  /** The path below the hierarchy's root. */
  relativePath(name: CgroupName): string {
    return this.driver === 'systemd' ? toSystemd(name) : toCgroupfs(name);
  }

  /** The directories this cgroup is, one per v1 controller or the one v2 directory. */
  paths(name: CgroupName): string[] {
    const rel = this.relativePath(name);
    if (this.version === 2) return [path.join(this.mountPoint, rel)];
    const seen = new Set<string>();
    const out: string[] = [];
    for (const s of this.#v1Mounted()) {
      const dir = path.join(this.mountPoint, s);
      // cpu and cpuacct are usually one hierarchy with two names.
      let real = dir;
      try {
        real = fs.realpathSync(dir);
      } catch {}
      if (seen.has(real)) continue;
      seen.add(real);
      out.push(path.join(dir, rel));
    }
    return out;
  }

  /**
   * Every hierarchy's directory of the cgroup: the runtime makes container cgroups in all v1
   * controllers (cpuset, devices, blkio, the named systemd one, …), which removal must cover.
   */
  allPaths(name: CgroupName): string[] {
    const rel = this.relativePath(name);
    if (this.version === 2) return [path.join(this.mountPoint, rel)];
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(this.mountPoint, { withFileTypes: true });
    } catch {
      return [];
    }
    const seen = new Set<string>();
    const out: string[] = [];
    for (const e of entries) {
      // cpu -> cpu,cpuacct: the symlinks name hierarchies already listed.
      if (!e.isDirectory() && !e.isSymbolicLink()) continue;
      const dir = path.join(this.mountPoint, e.name);
      let real = dir;
      try {
        real = fs.realpathSync(dir);
      } catch {
        continue;
      }
      if (seen.has(real)) continue;
      seen.add(real);
      out.push(path.join(dir, rel));
    }
    return out;
  }

  #v1Mounted(): string[] {
    return v1Subsystems.filter((s) => fs.existsSync(path.join(this.mountPoint, s)));
  }

  #subsystemPath(name: CgroupName, subsystem: string): string {
    const rel = this.relativePath(name);
    return this.version === 2 ? path.join(this.mountPoint, rel) : path.join(this.mountPoint, subsystem, rel);
  }

  /** Upstream `Exists`: every controller's directory is there. */
  exists(name: CgroupName): boolean {
    const dirs = this.paths(name);
    return dirs.length > 0 && dirs.every((d) => fs.existsSync(d));
  }

  /** Upstream `Create`: the directories made (with their parents), then the values written. */
  create(name: CgroupName, config: ResourceConfig = {}): void {
    if (this.version === 2) this.#enableControllers(name);
    for (const d of this.paths(name)) fs.mkdirSync(d, { recursive: true });
    this.update(name, config);
  }

  /** v2: a child has only the controllers its parents enable in cgroup.subtree_control. */
  #enableControllers(name: CgroupName): void {
    const parts = this.relativePath(name)
      .split('/')
      .filter((p) => p !== '');
    let dir = this.mountPoint;
    for (let i = 0; i < parts.length; i++) {
      const control = path.join(dir, 'cgroup.subtree_control');
      let enabled = '';
      try {
        enabled = fs.readFileSync(control, 'utf8');
      } catch {}
      const have = new Set(enabled.split(/\s+/).filter((c) => c !== ''));
      const want = v2Controllers.filter((c) => !have.has(c));
      if (want.length > 0) {
        try {
          fs.writeFileSync(control, want.map((c) => `+${c}`).join(' '));
        } catch (err) {
          this.#log.warn({ cgroup: dir, err: String(err) }, 'failed to enable cgroup controllers');
        }
      }
      dir = path.join(dir, parts[i] ?? '');
      fs.mkdirSync(dir, { recursive: true });
    }
  }

  /** Upstream `Update`: the values given written, the rest left alone. */
  update(name: CgroupName, c: ResourceConfig): void {
    const files = this.version === 2 ? this.#v2Files(c) : this.#v1Files(c);
    for (const [subsystem, file, value] of files) {
      const dir = this.#subsystemPath(name, subsystem);
      if (!fs.existsSync(dir)) continue;
      fs.writeFileSync(path.join(dir, file), value);
    }
  }

  #v1Files(c: ResourceConfig): [string, string, string][] {
    const out: [string, string, string][] = [];
    if (c.cpuShares !== undefined) out.push(['cpu', 'cpu.shares', String(c.cpuShares)]);
    // The period first: a quota is checked against the current period.
    if (c.cpuPeriod !== undefined) out.push(['cpu', 'cpu.cfs_period_us', String(c.cpuPeriod)]);
    if (c.cpuQuota !== undefined) out.push(['cpu', 'cpu.cfs_quota_us', String(c.cpuQuota)]);
    if (c.memory !== undefined) out.push(['memory', 'memory.limit_in_bytes', String(c.memory)]);
    if (c.pidsLimit !== undefined)
      out.push(['pids', 'pids.max', c.pidsLimit > 0 ? String(c.pidsLimit) : 'max']);
    return out;
  }

  #v2Files(c: ResourceConfig): [string, string, string][] {
    const out: [string, string, string][] = [];
    if (c.cpuShares !== undefined) out.push(['', 'cpu.weight', String(cpuSharesToCpuWeight(c.cpuShares))]);
    if (c.cpuQuota !== undefined || c.cpuPeriod !== undefined) {
      const quota = c.cpuQuota === undefined || c.cpuQuota <= 0 ? 'max' : String(c.cpuQuota);
      out.push(['', 'cpu.max', `${quota} ${c.cpuPeriod ?? 100000}`]);
    }
    if (c.memory !== undefined) out.push(['', 'memory.max', c.memory > 0 ? String(c.memory) : 'max']);
    if (c.pidsLimit !== undefined) out.push(['', 'pids.max', c.pidsLimit > 0 ? String(c.pidsLimit) : 'max']);
    return out;
  }

  /** A value file of the cgroup, e.g. `cpu.shares` (v1) or `cpu.weight` (v2); undefined if absent. */
  read(name: CgroupName, subsystem: string, file: string): string | undefined {
    try {
      return fs.readFileSync(path.join(this.#subsystemPath(name, subsystem), file), 'utf8').trim();
    } catch {
      return undefined;
    }
  }

  /** Upstream `Pids`: the processes in the cgroup and below it. */
  pids(name: CgroupName): number[] {
    const out = new Set<number>();
    const walk = (dir: string): void => {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      try {
        for (const line of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n')) {
          const pid = Number(line.trim());
          if (line.trim() !== '' && Number.isInteger(pid)) out.add(pid);
        }
      } catch {}
      for (const e of entries) if (e.isDirectory()) walk(path.join(dir, e.name));
    };
    for (const d of this.allPaths(name)) walk(d);
    return [...out];
  }

  /**
   * Upstream `Destroy`: the cgroup and its children removed, deepest first (the kernel removes
   * a cgroup directory only once it has no child and no process).
   */
  destroy(name: CgroupName): void {
    for (const d of this.allPaths(name)) removeCgroupDir(d);
  }

  /** The child directories of a cgroup, as names (for finding pod cgroups). */
  children(name: CgroupName): string[] {
    const dir = this.#subsystemPath(name, this.version === 2 ? '' : 'cpu');
    try {
      return fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return [];
    }
  }
}

function removeCgroupDir(dir: string): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) removeCgroupDir(path.join(dir, e.name));
  try {
    fs.rmdirSync(dir);
  } catch (err) {
    // A fake cgroupfs (tests) holds plain files: remove them.
    if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' && !isRealCgroup(dir))
      fs.rmSync(dir, { recursive: true, force: true });
    else throw err;
  }
}

function isRealCgroup(dir: string): boolean {
  try {
    // cgroupfs and cgroup2 report no ordinary filesystem type: statfs magic 0x27e0eb / 0x63677270.
    const t = fs.statfsSync(dir).type;
    return t === 0x27e0eb || t === 0x63677270;
  } catch {
    return false;
  }
}
