// Upstream pkg/kubelet/eviction/helpers.go: parsing the threshold flags, observing signals in a
// stats summary, deciding which thresholds are met, and ranking pods for eviction.
import {
  type FsStats,
  isCriticalPod,
  type Pod,
  type PodStats,
  parseQuantity,
  type Quantity,
  type Summary,
} from '@kubelet-kit/core';
import {
  configurableSignals,
  type Signal,
  type StatsFunc,
  type Threshold,
  type ThresholdValue,
} from './types.js';

/** A threshold flag could not be parsed; the message names the flag and the signal. @public */
export class EvictionConfigError extends Error {
  readonly code = 'InvalidEvictionConfig';
  constructor(message: string) {
    super(message);
    this.name = 'EvictionConfigError';
  }
}

/** The eviction flags, as the kubelet's configuration holds them. @public */
export interface ThresholdConfig {
  /** `--enforce-node-allocatable`: with `pods`, a hard memory threshold also guards the pods' allocatable. */
  readonly enforceNodeAllocatable?: readonly string[];
  /** `--eviction-hard`: signal → quantity or percentage. */
  readonly evictionHard?: Readonly<Record<string, string>>;
  /** `--eviction-soft`: signal → quantity or percentage; each needs a grace period. */
  readonly evictionSoft?: Readonly<Record<string, string>>;
  /** `--eviction-soft-grace-period`: signal → milliseconds. */
  readonly evictionSoftGracePeriodMs?: Readonly<Record<string, number>>;
  /** `--eviction-minimum-reclaim`: signal → quantity or percentage. */
  readonly evictionMinimumReclaim?: Readonly<Record<string, string>>;
}

const knownSignals: ReadonlySet<string> = new Set(configurableSignals);

function checkSignal(flag: string, signal: string): Signal {
  if (!knownSignals.has(signal))
    throw new EvictionConfigError(`${flag}: unsupported eviction signal ${signal}`);
  return signal as Signal;
}

/** Upstream `parsePercentage`: "10%" → 0.1 (float32 precision, as upstream parses it). */
function parsePercentage(flag: string, signal: string, input: string): number {
  const text = input.replace(/%+$/, '');
  const value = Number(text);
  if (text === '' || !Number.isFinite(value)) {
    throw new EvictionConfigError(`${flag}: ${signal}: invalid percentage ${JSON.stringify(input)}`);
  }
  return Math.fround(value) / 100;
}

function parseAmount(flag: string, signal: string, input: string): { quantity: number; binary: boolean } {
  let quantity: number;
  try {
    quantity = parseQuantity(input);
  } catch {
    throw new EvictionConfigError(`${flag}: ${signal}: invalid quantity ${JSON.stringify(input)}`);
  }
  return { quantity, binary: /[KMGTPE]i$/.test(input) };
}

/** Upstream `parseThresholdStatement`; undefined for 0% and 100%, which upstream ignores. */
function parseThresholdStatement(flag: string, name: string, input: string): Threshold | undefined {
  const signal = checkSignal(flag, name);
  if (input.endsWith('%')) {
    if (input === '0%' || input === '100%') return undefined;
    const percentage = parsePercentage(flag, name, input);
    if (percentage < 0)
      throw new EvictionConfigError(`${flag}: eviction percentage threshold ${name} must be >= 0%: ${input}`);
    if (percentage > 1)
      throw new EvictionConfigError(
        `${flag}: eviction percentage threshold ${name} must be <= 100%: ${input}`,
      );
    return { signal, value: { percentage }, gracePeriodMs: 0 };
  }
  const amount = parseAmount(flag, name, input);
  if (amount.quantity <= 0)
    throw new EvictionConfigError(`${flag}: eviction threshold ${name} must be positive: ${input}`);
  return { signal, value: amount, gracePeriodMs: 0 };
}

function parseStatements(
  flag: string,
  statements: Readonly<Record<string, string>> | undefined,
): Threshold[] {
  const out: Threshold[] = [];
  for (const [name, input] of Object.entries(statements ?? {})) {
    const t = parseThresholdStatement(flag, name, input);
    if (t) out.push(t);
  }
  return out;
}

function parseMinimumReclaims(
  statements: Readonly<Record<string, string>> | undefined,
): Map<Signal, ThresholdValue> {
  const flag = '--eviction-minimum-reclaim';
  const out = new Map<Signal, ThresholdValue>();
  for (const [name, input] of Object.entries(statements ?? {})) {
    const signal = checkSignal(flag, name);
    if (input.endsWith('%')) {
      const percentage = parsePercentage(flag, name, input);
      if (percentage <= 0)
        throw new EvictionConfigError(
          `${flag}: eviction percentage minimum reclaim ${name} must be positive: ${input}`,
        );
      out.set(signal, { percentage });
      continue;
    }
    const amount = parseAmount(flag, name, input);
    if (amount.quantity < 0)
      throw new EvictionConfigError(`${flag}: negative eviction minimum reclaim specified for ${name}`);
    out.set(signal, amount);
  }
  return out;
}

/**
 * The thresholds the flags describe (upstream `ParseThresholdConfig`): the hard ones, the soft
 * ones with their grace periods, minimum reclaims attached, and with `pods` allocatable enforced
 * a copy of each hard `memory.available` threshold for `allocatableMemory.available`.
 * @public
 */
export function parseThresholdConfig(config: ThresholdConfig): Threshold[] {
  const hard = parseStatements('--eviction-hard', config.evictionHard);
  const grace = new Map<Signal, number>();
  for (const [name, ms] of Object.entries(config.evictionSoftGracePeriodMs ?? {})) {
    const signal = checkSignal('--eviction-soft-grace-period', name);
    if (ms < 0) throw new EvictionConfigError(`--eviction-soft-grace-period: ${name}: must be non-negative`);
    grace.set(signal, ms);
  }
  const soft = parseStatements('--eviction-soft', config.evictionSoft).map((t) => {
    const gracePeriodMs = grace.get(t.signal);
    if (gracePeriodMs === undefined) {
      throw new EvictionConfigError(
        `--eviction-soft: grace period must be specified for the soft eviction threshold ${t.signal}`,
      );
    }
    return { ...t, gracePeriodMs };
  });
  const reclaims = parseMinimumReclaims(config.evictionMinimumReclaim);
  let results = [...hard, ...soft].map((t) => {
    const minReclaim = reclaims.get(t.signal);
    return minReclaim ? { ...t, minReclaim } : t;
  });
  if (config.enforceNodeAllocatable?.includes('pods')) {
    const extra = results
      .filter((t) => t.signal === 'memory.available' && isHardEvictionThreshold(t))
      .map((t): Threshold => ({ ...t, signal: 'allocatableMemory.available' }));
    results = [...results, ...extra];
  }
  return results;
}

/** Upstream `isHardEvictionThreshold`: no grace period. @public */
export function isHardEvictionThreshold(t: Threshold): boolean {
  return t.gracePeriodMs === 0;
}

/** What a threshold's value comes to against a capacity (upstream `GetThresholdQuantity`). @public */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  if ('quantity' in value) return value.quantity;
  return Math.trunc(capacity * value.percentage);
}

// --- quantities as upstream prints them -------------------------------------------------------

/**
 * A whole number as upstream's `resource.Quantity.String()` prints it: binary quantities in the
 * largest power of 1024 that divides them exactly ("100Mi", "1536"), decimal ones in the largest
 * power of 1000 ("5k").
 * @internal
 */
export function formatQuantity(value: number, binary: boolean): string {
  let v = Math.trunc(value);
  if (binary && Math.abs(v) >= 1024) {
    const suffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
    let i = 0;
    while (i < suffixes.length - 1 && v !== 0 && v % 1024 === 0) {
      v /= 1024;
      i++;
    }
    return `${v}${suffixes[i]}`;
  }
  const suffixes = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
  let i = 0;
  while (i < suffixes.length - 1 && v !== 0 && v % 1000 === 0) {
    v /= 1000;
    i++;
  }
  return `${v}${suffixes[i]}`;
}

function formatValue(value: ThresholdValue, capacity: number, binary: boolean): string {
  if ('quantity' in value) return formatQuantity(value.quantity, value.binary);
  return formatQuantity(thresholdQuantity(value, capacity), binary);
}

// --- observations -----------------------------------------------------------------------------

/** A signal's value in one summary (upstream `signalObservation`). @public */
export interface SignalObservation {
  readonly available: number;
  readonly capacity: number;
  /** The summary's time for the figure (RFC 3339). */
  readonly time: string;
}

/** @public */
export type SignalObservations = ReadonlyMap<Signal, SignalObservation>;

/** Bytes signals print as binary quantities, counts as decimal ones. */
function isByteSignal(signal: Signal): boolean {
  return !signal.endsWith('inodesFree') && signal !== 'pid.available';
}

function fsObservations(
  out: Map<Signal, SignalObservation>,
  fs: FsStats | undefined,
  bytes: Signal,
  inodes: Signal,
): void {
  if (!fs) return;
  if (fs.availableBytes !== undefined && fs.capacityBytes !== undefined) {
    out.set(bytes, { available: fs.availableBytes, capacity: fs.capacityBytes, time: fs.time });
  }
  if (fs.inodesFree !== undefined && fs.inodes !== undefined) {
    out.set(inodes, { available: fs.inodesFree, capacity: fs.inodes, time: fs.time });
  }
}

/**
 * The signals a summary shows, and a look-up of each pod's stats (upstream
 * `makeSignalObservations`). Memory capacity is available + working set, as upstream.
 * @public
 */
export function makeSignalObservations(summary: Summary): {
  observations: SignalObservations;
  statsFunc: StatsFunc;
} {
  const byUid = new Map<string, PodStats>();
  for (const p of summary.pods) byUid.set(p.podRef.uid, p);
  const statsFunc: StatsFunc = (pod) => byUid.get(pod.metadata?.uid ?? '');
  const out = new Map<Signal, SignalObservation>();
  const memory = summary.node.memory;
  if (memory?.availableBytes !== undefined && memory.workingSetBytes !== undefined) {
    out.set('memory.available', {
      available: memory.availableBytes,
      capacity: memory.availableBytes + memory.workingSetBytes,
      time: memory.time,
    });
  }
  const pods = summary.node.systemContainers?.find((c) => c.name === 'pods')?.memory;
  if (pods?.availableBytes !== undefined && pods.workingSetBytes !== undefined) {
    out.set('allocatableMemory.available', {
      available: pods.availableBytes,
      capacity: pods.availableBytes + pods.workingSetBytes,
      time: pods.time,
    });
  }
  fsObservations(out, summary.node.fs, 'nodefs.available', 'nodefs.inodesFree');
  fsObservations(out, summary.node.runtime?.imageFs, 'imagefs.available', 'imagefs.inodesFree');
  const rlimit = summary.node.rlimit;
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) {
    out.set('pid.available', {
      available: rlimit.maxpid - rlimit.curproc,
      capacity: rlimit.maxpid,
      time: rlimit.time,
    });
  }
  return { observations: out, statsFunc };
}

// --- thresholds -------------------------------------------------------------------------------

/**
 * The thresholds the observations meet (upstream `thresholdsMet`); with `enforceMinReclaim` a
 * threshold counts as met until the signal is its minimum reclaim past it.
 * @public
 */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: SignalObservations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const observed = observations.get(t.signal);
    if (!observed) return false;
    let quantity = thresholdQuantity(t.value, observed.capacity);
    if (enforceMinReclaim && t.minReclaim) quantity += thresholdQuantity(t.minReclaim, observed.capacity);
    return quantity > observed.available;
  });
}

/** Upstream `mergeThresholds`: the union, each threshold once. @internal */
export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const out = [...a];
  for (const t of b) if (!out.includes(t)) out.push(t);
  return out;
}

/** A node condition an eviction signal drives (upstream `signalToNodeCondition`). @public */
export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

const signalToNodeCondition: Readonly<Record<Signal, PressureCondition>> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** Upstream `nodeConditions`: the conditions the thresholds drive, each once. @internal */
export function nodeConditions(thresholds: readonly Threshold[]): PressureCondition[] {
  const out: PressureCondition[] = [];
  for (const t of thresholds) {
    const c = signalToNodeCondition[t.signal];
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

/** A resource the manager reclaims: a pod resource, or inodes and pids (upstream `signalToResource`). @public */
export type ReclaimResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

/** @internal */
export const signalToResource: Readonly<Record<Signal, ReclaimResource>> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

/**
 * Upstream `byEvictionPriority`: memory thresholds first, the others in their order (every
 * supported signal has a resource to reclaim).
 * @internal
 */
export function sortByEvictionPriority(thresholds: readonly Threshold[]): Threshold[] {
  const memory = (t: Threshold) =>
    t.signal === 'memory.available' || t.signal === 'allocatableMemory.available';
  return [...thresholds.filter(memory), ...thresholds.filter((t) => !memory(t))];
}

// --- pod usage --------------------------------------------------------------------------------

/** Which parts of a pod's disk use a ranking counts (upstream `fsStatsType`). @internal */
export type FsStatsType = 'root' | 'logs' | 'localVolumeSource' | 'images';

function usedBytes(fs: FsStats | undefined): number {
  return fs?.usedBytes ?? 0;
}

function inodesUsed(fs: FsStats | undefined): number {
  return fs?.inodesUsed ?? 0;
}

/** Upstream `localVolumeNames`: hostPath and local ephemeral volumes (disk emptyDir, configMap, gitRepo). */
function localVolumeNames(pod: Pod): string[] {
  return (pod.spec?.volumes ?? [])
    .filter(
      (v) =>
        v.hostPath !== undefined ||
        v.gitRepo !== undefined ||
        v.configMap !== undefined ||
        (v.emptyDir !== undefined && (v.emptyDir.medium ?? '') === ''),
    )
    .map((v) => v.name);
}

/** Upstream `podDiskUsage`: bytes and inodes of the measured parts. @internal */
export function podDiskUsage(
  stats: PodStats,
  pod: Pod,
  measure: readonly FsStatsType[],
): { readonly 'ephemeral-storage': number; readonly inodes: number } {
  let disk = 0;
  let inodes = 0;
  for (const c of stats.containers) {
    if (measure.includes('root')) {
      disk += usedBytes(c.rootfs);
      inodes += inodesUsed(c.rootfs);
    }
    if (measure.includes('logs')) {
      disk += usedBytes(c.logs);
      inodes += inodesUsed(c.logs);
    }
  }
  if (measure.includes('localVolumeSource')) {
    for (const name of localVolumeNames(pod)) {
      const v = stats.volume?.find((s) => s.name === name);
      disk += usedBytes(v);
      inodes += inodesUsed(v);
    }
  }
  return { 'ephemeral-storage': disk, inodes };
}

function requestOf(list: Readonly<Record<string, Quantity>> | undefined, name: string): number | undefined {
  const q = list?.[name];
  return q === undefined ? undefined : parseQuantity(q);
}

/**
 * A pod's request of one resource (upstream `v1resource.GetResourceRequestQuantity`): the
 * containers' sum or the largest init container's, plus the overhead when non-zero.
 * @internal
 */
export function resourceRequest(pod: Pod, name: string): number {
  let total = 0;
  for (const c of pod.spec?.containers ?? []) total += requestOf(c.resources?.requests, name) ?? 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const r = requestOf(c.resources?.requests, name);
    if (r !== undefined && r > total) total = r;
  }
  const overhead = requestOf(pod.spec?.overhead, name);
  if (overhead !== undefined && total !== 0) total += overhead;
  return total;
}

// --- ranking ----------------------------------------------------------------------------------

type Cmp = (a: Pod, b: Pod) => number;

/** Upstream `cmpBool`: true before false. */
function cmpBool(a: boolean, b: boolean): number {
  if (a === b) return 0;
  return a ? -1 : 1;
}

function orderedBy(...cmps: Cmp[]): (pods: Pod[]) => void {
  return (pods) => {
    pods.sort((a, b) => {
      for (const cmp of cmps) {
        const r = cmp(a, b);
        if (r !== 0) return r;
      }
      return 0;
    });
  };
}

/** Lower priority first (upstream `priority`). */
const byPriority: Cmp = (a, b) => {
  const pa = a.spec?.priority ?? 0;
  const pb = b.spec?.priority ?? 0;
  return pa === pb ? 0 : pa > pb ? 1 : -1;
};

/** Pods without stats first; otherwise `f` on both stats. */
function withStats(stats: StatsFunc, f: (a: Pod, sa: PodStats, b: Pod, sb: PodStats) => number): Cmp {
  return (a, b) => {
    const sa = stats(a);
    const sb = stats(b);
    if (!sa || !sb) return cmpBool(!sa, !sb);
    return f(a, sa, b, sb);
  };
}

const memoryUsage = (s: PodStats): number => s.memory?.workingSetBytes ?? 0;

/** A way to order running pods for eviction under one signal (upstream `rankFunc`). @internal */
export type RankFunc = (pods: Pod[], stats: StatsFunc) => void;

/** Upstream `rankMemoryPressure`: usage above requests, then priority, then usage over request. @internal */
export const rankMemoryPressure: RankFunc = (pods, stats) =>
  orderedBy(
    withStats(stats, (a, sa, b, sb) =>
      cmpBool(memoryUsage(sa) > resourceRequest(a, 'memory'), memoryUsage(sb) > resourceRequest(b, 'memory')),
    ),
    byPriority,
    withStats(stats, (a, sa, b, sb) => {
      const ua = memoryUsage(sa) - resourceRequest(a, 'memory');
      const ub = memoryUsage(sb) - resourceRequest(b, 'memory');
      return Math.sign(ub - ua);
    }),
  )(pods);

/** Upstream `rankPIDPressure`: priority, then the most processes. @internal */
export const rankPIDPressure: RankFunc = (pods, stats) =>
  orderedBy(
    byPriority,
    withStats(stats, (_a, sa, _b, sb) =>
      Math.sign((sb.process_stats?.process_count ?? 0) - (sa.process_stats?.process_count ?? 0)),
    ),
  )(pods);

/** Upstream `rankDiskPressureFunc`: usage above requests, then priority, then usage over request. @internal */
export function rankDiskPressureFunc(
  measure: readonly FsStatsType[],
  resource: 'ephemeral-storage' | 'inodes',
): RankFunc {
  return (pods, stats) =>
    orderedBy(
      withStats(stats, (a, sa, b, sb) =>
        cmpBool(
          podDiskUsage(sa, a, measure)[resource] > resourceRequest(a, resource),
          podDiskUsage(sb, b, measure)[resource] > resourceRequest(b, resource),
        ),
      ),
      byPriority,
      withStats(stats, (a, sa, b, sb) => {
        // Upstream subtracts the ephemeral-storage request for both resources.
        const ua = podDiskUsage(sa, a, measure)[resource] - resourceRequest(a, 'ephemeral-storage');
        const ub = podDiskUsage(sb, b, measure)[resource] - resourceRequest(b, 'ephemeral-storage');
        return Math.sign(ub - ua);
      }),
    )(pods);
}

/**
 * The ranking for each signal (upstream `buildSignalToRankFunc`). With a dedicated image
 * filesystem, nodefs pressure counts logs and local volumes, imagefs pressure the writable
 * layers; on a shared one both count everything.
 * @internal
 */
export function buildSignalToRankFunc(withImageFs: boolean): ReadonlyMap<Signal, RankFunc> {
  const m = new Map<Signal, RankFunc>([
    ['memory.available', rankMemoryPressure],
    ['allocatableMemory.available', rankMemoryPressure],
    ['pid.available', rankPIDPressure],
  ]);
  const all: FsStatsType[] = ['images', 'root', 'logs', 'localVolumeSource'];
  const node: FsStatsType[] = withImageFs ? ['logs', 'localVolumeSource'] : all;
  const image: FsStatsType[] = withImageFs ? ['root', 'images'] : all;
  m.set('nodefs.available', rankDiskPressureFunc(node, 'ephemeral-storage'));
  m.set('nodefs.inodesFree', rankDiskPressureFunc(node, 'inodes'));
  m.set('imagefs.available', rankDiskPressureFunc(image, 'ephemeral-storage'));
  m.set('imagefs.inodesFree', rankDiskPressureFunc(image, 'inodes'));
  return m;
}

// --- messages ---------------------------------------------------------------------------------

/**
 * The eviction message and event annotations (upstream `evictionMessage`): the starved resource,
 * the threshold and what was available, and each container using more than it requested.
 * @internal
 */
export function evictionMessage(
  resource: ReclaimResource,
  pod: Pod,
  stats: StatsFunc,
  thresholds: readonly Threshold[],
  observations: SignalObservations,
): { message: string; annotations: Record<string, string> } {
  let message = `The node was low on resource: ${resource}. `;
  for (const t of thresholds) {
    if (signalToResource[t.signal] !== resource) continue;
    const observed = observations.get(t.signal);
    if (!observed) continue;
    const binary = isByteSignal(t.signal);
    message += `Threshold quantity: ${formatValue(t.value, observed.capacity, binary)}, available: ${formatQuantity(observed.available, binary)}. `;
    break;
  }
  const containers: string[] = [];
  const usages: string[] = [];
  const podStats = stats(pod);
  if (podStats) {
    for (const cs of podStats.containers) {
      const container = (pod.spec?.containers ?? []).find((c) => c.name === cs.name);
      if (!container) continue;
      const request = requestOf(container.resources?.requests, resource) ?? 0;
      let usage: number | undefined;
      if (resource === 'ephemeral-storage') {
        if (cs.rootfs?.usedBytes !== undefined && cs.logs?.usedBytes !== undefined) {
          usage = cs.rootfs.usedBytes + cs.logs.usedBytes;
        }
      } else if (resource === 'memory') {
        usage = cs.memory?.workingSetBytes;
      }
      if (usage !== undefined && usage > request) {
        const used = formatQuantity(usage, true);
        const requested = container.resources?.requests?.[resource];
        const requestText =
          requested === undefined
            ? '0'
            : formatQuantity(request, /i$/.test(String(requested)) || request === 0);
        message += `Container ${container.name} was using ${used}, request is ${requestText}, has larger consumption of ${resource}. `;
        containers.push(container.name);
        usages.push(used);
      }
    }
  }
  return {
    message,
    annotations: {
      offending_containers: containers.join(','),
      offending_containers_usage: usages.join(','),
      starved_resource: resource,
    },
  };
}

/** Critical pods (static, mirror, system priority) are never evicted. @internal */
export function canEvict(pod: Pod): boolean {
  return !isCriticalPod(pod);
}
