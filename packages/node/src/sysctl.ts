import os from 'node:os';
import type { Pod } from '@kubelet-kit/core';
import type { PodAdmitResult } from './admission.js';

/** The kernel namespace a sysctl lives in (upstream `utilsysctl.Namespace`); `''` when not namespaced. */
export type SysctlNamespace = 'ipc' | 'net' | '';

/** Upstream's admission reason for a pod whose sysctls the node refuses. */
export const sysctlForbiddenReason = 'SysctlForbidden';

/** The sysctls upstream calls safe, with the oldest kernel (major.minor) where each is namespaced. */
const safeSysctls: ReadonlyArray<{ readonly name: string; readonly kernel?: readonly [number, number] }> = [
  { name: 'kernel.shm_rmid_forced' },
  { name: 'net.ipv4.ip_local_port_range' },
  { name: 'net.ipv4.tcp_syncookies' },
  { name: 'net.ipv4.ping_group_range' },
  { name: 'net.ipv4.ip_unprivileged_port_start' },
  { name: 'net.ipv4.ip_local_reserved_ports', kernel: [3, 16] },
  { name: 'net.ipv4.tcp_keepalive_time', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_fin_timeout', kernel: [4, 6] },
  { name: 'net.ipv4.tcp_keepalive_intvl', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_keepalive_probes', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_rmem', kernel: [4, 15] },
  { name: 'net.ipv4.tcp_wmem', kernel: [4, 15] },
];

/** `major.minor` of a kernel release such as `6.8.0-45-generic`; undefined when it has none. */
export function parseKernelVersion(release: string): readonly [number, number] | undefined {
  const m = /^(\d+)\.(\d+)/.exec(release.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * Upstream `SafeSysctlAllowlist`: the safe sysctls this kernel namespaces (`release` defaults to
 * `os.release()`). Those needing a newer kernel, or any kernel when the release cannot be read,
 * are left out; off Linux there are none.
 */
export function safeSysctlAllowlist(release: string = os.release(), platform = process.platform): string[] {
  if (platform !== 'linux') return [];
  const kernel = parseKernelVersion(release);
  return safeSysctls
    .filter(
      (s) =>
        s.kernel === undefined ||
        (kernel !== undefined &&
          (kernel[0] > s.kernel[0] || (kernel[0] === s.kernel[0] && kernel[1] >= s.kernel[1]))),
    )
    .map((s) => s.name);
}

const namespacedSysctls: Readonly<Record<string, SysctlNamespace>> = { 'kernel.sem': 'ipc' };
const namespacedPrefixes: ReadonlyArray<readonly [string, SysctlNamespace]> = [
  ['kernel.shm', 'ipc'],
  ['kernel.msg', 'ipc'],
  ['fs.mqueue.', 'ipc'],
  ['net.', 'net'],
];

/** Upstream `NamespacedBy`: the namespace of a sysctl (dot-separated), or `''`. */
export function sysctlNamespace(name: string): SysctlNamespace {
  const exact = namespacedSysctls[name];
  if (exact !== undefined) return exact;
  return namespacedPrefixes.find(([p]) => name.startsWith(p))?.[1] ?? '';
}

/**
 * Upstream `ConvertSysctlVariableToDotsSeparator`: a name whose first separator is `/`
 * (`net/ipv4/conf/eno2.100/rp_filter`) has its `.` and `/` swapped, so it reads
 * `net.ipv4.conf.eno2/100.rp_filter`; one already dot-separated is kept.
 */
export function toDotSeparatedSysctl(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

const sysctlMaxLength = 253;
/** Upstream's `SysctlContainSlashPatternFmt`: segments split by `.` or `/`, the last may end in `*`. */
export const sysctlPatternFormat = '([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]';
const sysctlPattern = new RegExp(`^${sysctlPatternFormat}$`);

/** Upstream `IsValidSysctlPattern`. */
export function isValidSysctlPattern(pattern: string): boolean {
  return pattern.length <= sysctlMaxLength && sysctlPattern.test(pattern);
}

/**
 * Upstream's sysctl admit handler (`pkg/kubelet/sysctl`'s `patternAllowlist`): the sysctls and
 * patterns (ending in `*`) a pod may set, each known to be namespaced.
 *
 * @public
 */
export class SysctlAllowlist {
  readonly #sysctls = new Map<string, SysctlNamespace>();
  readonly #prefixes = new Map<string, SysctlNamespace>();

  /** Throws on a pattern that is malformed or names a sysctl not known to be namespaced. */
  constructor(patterns: readonly string[]) {
    for (const raw of patterns) {
      if (!isValidSysctlPattern(raw)) {
        throw new Error(
          `sysctl ${JSON.stringify(raw)} must have at most ${sysctlMaxLength} characters and match regex ${sysctlPatternFormat}`,
        );
      }
      const s = toDotSeparatedSysctl(raw);
      if (s.endsWith('*')) {
        const prefix = s.slice(0, -1);
        const ns = sysctlNamespace(prefix);
        if (ns === '') throw new Error(`the sysctls ${JSON.stringify(s)} are not known to be namespaced`);
        this.#prefixes.set(prefix, ns);
      } else {
        const ns = sysctlNamespace(s);
        if (ns === '') throw new Error(`the sysctl ${JSON.stringify(s)} are not known to be namespaced`);
        this.#sysctls.set(s, ns);
      }
    }
  }

  /** The safe sysctls of this kernel plus `allowedUnsafe` (upstream `--allowed-unsafe-sysctls`). */
  static forNode(allowedUnsafe: readonly string[] = [], release?: string): SysctlAllowlist {
    return new SysctlAllowlist([...safeSysctlAllowlist(release), ...allowedUnsafe]);
  }

  /**
   * Upstream `validateSysctl`: why `name` is refused (not allowlisted, or in a namespace the pod
   * shares with the host), undefined when allowed.
   */
  validate(name: string, hostNetwork: boolean, hostIPC: boolean): string | undefined {
    const sysctl = toDotSeparatedSysctl(name);
    let ns = this.#sysctls.get(sysctl);
    if (ns === undefined) {
      for (const [p, pns] of this.#prefixes) {
        if (sysctl.startsWith(p)) {
          ns = pns;
          break;
        }
      }
    }
    if (ns === undefined) return `${JSON.stringify(sysctl)} not allowlisted`;
    if ((ns === 'ipc' && hostIPC) || (ns === 'net' && hostNetwork)) {
      return `${JSON.stringify(sysctl)} not allowed with host ${ns} enabled`;
    }
    return undefined;
  }

  /** Upstream's `Admit`: the first refused sysctl of `spec.securityContext.sysctls` fails the pod. */
  admit(pod: Pod): PodAdmitResult {
    for (const s of pod.spec?.securityContext?.sysctls ?? []) {
      const err = this.validate(s.name, pod.spec?.hostNetwork === true, pod.spec?.hostIPC === true);
      if (err !== undefined) {
        return { admit: false, reason: sysctlForbiddenReason, message: `forbidden sysctl: ${err}` };
      }
    }
    return { admit: true };
  }
}
