import fs from 'node:fs/promises';
import path from 'node:path';

// The node's own figures from /proc, which upstream takes from cadvisor's root cgroup. /proc
// reads the same on cgroup v1 and v2 hosts (these machines are v1 hybrid), so the agent does not
// depend on which hierarchy the root cgroup is in.

/** USER_HZ: /proc/stat counts in 1/100 s on every Linux architecture the agent runs on. */
const userHz = 100;

/** @internal */
export interface HostCpu {
  readonly usageCoreNanoSeconds: number;
}

/** @internal */
export interface HostMemory {
  readonly totalBytes: number;
  readonly usageBytes: number;
  readonly workingSetBytes: number;
  readonly availableBytes: number;
  readonly rssBytes: number;
  readonly pageFaults: number;
  readonly majorPageFaults: number;
}

/** @internal */
export interface HostInterface {
  readonly name: string;
  readonly rxBytes: number;
  readonly rxErrors: number;
  readonly txBytes: number;
  readonly txErrors: number;
}

/** Reads the host's /proc (a different root in tests). @internal */
export class HostStats {
  readonly #proc: string;

  constructor(procRoot = '/proc') {
    this.#proc = procRoot;
  }

  #read(name: string): Promise<string> {
    return fs.readFile(path.join(this.#proc, name), 'utf8');
  }

  /** Busy time of all CPUs: every /proc/stat `cpu` column but idle and iowait (guest is in user). */
  async cpu(): Promise<HostCpu> {
    const line = (await this.#read('stat')).split('\n').find((l) => l.startsWith('cpu '));
    if (!line) throw new Error(`${this.#proc}/stat: no "cpu" line`);
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    const ticks = [user, nice, system, irq, softirq, steal].reduce((a: number, b) => a + (b ?? 0), 0);
    return { usageCoreNanoSeconds: Math.round((ticks * 1e9) / userHz) };
  }

  /** Boot time: the root cgroup's creation, which upstream reports as the node's startTime. */
  async bootTimeMs(): Promise<number> {
    const line = (await this.#read('stat')).split('\n').find((l) => l.startsWith('btime '));
    if (!line) throw new Error(`${this.#proc}/stat: no "btime" line`);
    return Number(line.slice(6)) * 1000;
  }

  /**
   * As cadvisor's root cgroup: usage is what is not free, the working set is usage less the
   * inactive file cache (reclaimable), available is total less the working set.
   */
  async memory(): Promise<HostMemory> {
    const info = parseKeyed(await this.#read('meminfo'), ':');
    const kib = (k: string) => (info.get(k) ?? 0) * 1024;
    const totalBytes = kib('MemTotal');
    const usageBytes = totalBytes - kib('MemFree');
    const workingSetBytes = Math.max(0, usageBytes - kib('Inactive(file)'));
    const vm = parseKeyed(await this.#read('vmstat'), ' ');
    return {
      totalBytes,
      usageBytes,
      workingSetBytes,
      availableBytes: Math.max(0, totalBytes - workingSetBytes),
      rssBytes: kib('AnonPages'),
      pageFaults: vm.get('pgfault') ?? 0,
      majorPageFaults: vm.get('pgmajfault') ?? 0,
    };
  }

  /** Interfaces of /proc/net/dev but loopback, and the one carrying the default route. */
  async network(): Promise<{ readonly interfaces: readonly HostInterface[]; readonly defaultName?: string }> {
    const lines = (await this.#read('net/dev')).split('\n').slice(2);
    const interfaces: HostInterface[] = [];
    for (const l of lines) {
      const colon = l.indexOf(':');
      if (colon < 0) continue;
      const name = l.slice(0, colon).trim();
      if (name === 'lo') continue;
      const f = l
        .slice(colon + 1)
        .trim()
        .split(/\s+/)
        .map(Number);
      interfaces.push({
        name,
        rxBytes: f[0] ?? 0,
        rxErrors: f[2] ?? 0,
        txBytes: f[8] ?? 0,
        txErrors: f[10] ?? 0,
      });
    }
    let defaultName: string | undefined;
    try {
      for (const l of (await this.#read('net/route')).split('\n').slice(1)) {
        const [iface, dest] = l.trim().split(/\s+/);
        if (dest === '00000000' && iface) {
          defaultName = iface;
          break;
        }
      }
    } catch {
      // no route table: no default interface
    }
    return { interfaces, ...(defaultName ? { defaultName } : {}) };
  }

  /** pid_max, and the tasks in existence (sysinfo's procs, the 4th field of loadavg). */
  async rlimit(): Promise<{ readonly maxpid: number; readonly curproc: number }> {
    const maxpid = Number((await this.#read('sys/kernel/pid_max')).trim());
    const tasks = (await this.#read('loadavg')).trim().split(/\s+/)[3] ?? '';
    return { maxpid, curproc: Number(tasks.split('/')[1] ?? 0) };
  }
}

function parseKeyed(text: string, sep: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of text.split('\n')) {
    const i = l.indexOf(sep);
    if (i <= 0) continue;
    out.set(l.slice(0, i).trim(), Number.parseInt(l.slice(i + 1).trim(), 10));
  }
  return out;
}
