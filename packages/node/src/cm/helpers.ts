import {
  type Container,
  type Pod,
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  quantityValue,
} from '@kubelet-kit/core';
import {
  getPodQOS,
  maxShares,
  milliCPUToQuota,
  milliCPUToShares,
  minShares,
  quotaPeriod,
} from '@kubelet-kit/kuberuntime';

// Upstream pkg/kubelet/cm/helpers_linux.go: the cgroup values of a pod, from its resources.

// The CPU conversions are kuberuntime's, which sets the same values on each container.
export { maxShares, milliCPUToQuota, milliCPUToShares, minShares, quotaPeriod };

/**
 * What a cgroup is given (upstream `ResourceConfig`); an absent field is left as it is.
 *
 * @internal
 */
export interface ResourceConfig {
  /** Bytes; v1 memory.limit_in_bytes, v2 memory.max. */
  memory?: number;
  /** v1 cpu.shares; v2 cpu.weight is derived from it. */
  cpuShares?: number;
  /** µs, -1 for none; v1 cpu.cfs_quota_us, v2 the first field of cpu.max. */
  cpuQuota?: number;
  /** µs; v1 cpu.cfs_period_us, v2 the second field of cpu.max. */
  cpuPeriod?: number;
  /** pids.max; -1 or absent for none. */
  pidsLimit?: number;
}

/**
 * Upstream `CpuSharesToCpuWeight` (cgroup v2): shares [2, 262144] mapped linearly onto weight
 * [1, 10000].
 *
 * @internal
 */
export function cpuSharesToCpuWeight(shares: number): number {
  return Math.trunc(1 + ((shares - 2) * 9999) / 262142);
}

function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

type Amounts = Record<string, number>;

function add(into: Amounts, from: Readonly<Record<string, Quantity>> | undefined): void {
  for (const [k, v] of Object.entries(from ?? {})) into[k] = (into[k] ?? 0) + parseQuantity(v);
}

function maxInto(into: Amounts, from: Amounts): void {
  for (const [k, v] of Object.entries(from)) if (v > (into[k] ?? 0)) into[k] = v;
}

/**
 * Upstream `resource.PodRequests`/`PodLimits`: regular and sidecar containers summed, the
 * largest init container (with the sidecars started before it) if more, pod-level values in
 * place of those, then the overhead. `seen` is called with each container's list.
 */
function podAmounts(
  pod: Pod,
  which: 'requests' | 'limits',
  seen?: (list: Readonly<Record<string, Quantity>>) => void,
): Amounts {
  const of = (c: Container): Readonly<Record<string, Quantity>> => {
    const r = c.resources ?? {};
    // Requests are defaulted from limits, as the API server does for pods it stores.
    const list = which === 'requests' ? { ...(r.limits ?? {}), ...(r.requests ?? {}) } : (r.limits ?? {});
    seen?.(list);
    return list;
  };
  const sum: Amounts = {};
  for (const c of pod.spec?.containers ?? []) add(sum, of(c));
  const sidecars: Amounts = {};
  const initMax: Amounts = {};
  for (const c of pod.spec?.initContainers ?? []) {
    const list = of(c);
    if (isSidecar(c)) {
      add(sidecars, list);
      add(sum, list);
    } else {
      const one: Amounts = { ...sidecars };
      add(one, list);
      maxInto(initMax, one);
    }
  }
  maxInto(sum, initMax);
  const podLevel = pod.spec?.resources?.[which];
  if (podLevel)
    for (const k of ['cpu', 'memory']) if (podLevel[k] !== undefined) sum[k] = parseQuantity(podLevel[k]);
  add(sum, pod.spec?.overhead);
  return sum;
}

function isZeroQuantity(q: Quantity | undefined): boolean {
  return q === undefined || parseQuantity(q) === 0;
}

/** Options of {@link resourceConfigForPod}. @internal */
export interface PodResourceConfigOptions {
  /** Upstream --cpu-cfs-quota (default true): without it, no quota (-1). */
  readonly enforceCPULimits?: boolean;
  /** µs, default 100000. */
  readonly cpuPeriod?: number;
  /** Upstream --pod-max-pids; -1 or absent for none. */
  readonly podPidsLimit?: number;
}

/**
 * Upstream `ResourceConfigForPod`: shares from the pod's cpu request; a quota and a memory limit
 * only when every container (or the pod level) limits that resource; BestEffort gets 2 shares.
 *
 * @internal
 */
export function resourceConfigForPod(pod: Pod, options: PodResourceConfigOptions = {}): ResourceConfig {
  const cpuPeriod = options.cpuPeriod ?? quotaPeriod;
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  const reqs = podAmounts(pod, 'requests');
  const limits = podAmounts(pod, 'limits', (list) => {
    if (isZeroQuantity(list.cpu)) cpuLimitsDeclared = false;
    if (isZeroQuantity(list.memory)) memoryLimitsDeclared = false;
  });
  const podLevel = pod.spec?.resources?.limits;
  if (podLevel && !isZeroQuantity(podLevel.cpu)) cpuLimitsDeclared = true;
  if (podLevel && !isZeroQuantity(podLevel.memory)) memoryLimitsDeclared = true;

  const cpuShares = milliCPUToShares(quantityMilliValue(reqs.cpu ?? 0));
  let cpuQuota = milliCPUToQuota(quantityMilliValue(limits.cpu ?? 0), cpuPeriod);
  if (options.enforceCPULimits === false) cpuQuota = -1;
  const memory = quantityValue(limits.memory ?? 0);

  const result: ResourceConfig = {};
  const qos = getPodQOS(pod);
  if (qos === 'Guaranteed') {
    Object.assign(result, { cpuShares, cpuQuota, cpuPeriod, memory });
  } else if (qos === 'Burstable') {
    result.cpuShares = cpuShares;
    if (cpuLimitsDeclared) Object.assign(result, { cpuQuota, cpuPeriod });
    if (memoryLimitsDeclared) result.memory = memory;
  } else {
    result.cpuShares = minShares;
  }
  if (options.podPidsLimit !== undefined && options.podPidsLimit > 0) result.pidsLimit = options.podPidsLimit;
  return result;
}

/** The pod's cpu request in millicores, as upstream's QoS manager sums them. @internal */
export function podCPURequestMilli(pod: Pod): number {
  return quantityMilliValue(podAmounts(pod, 'requests').cpu ?? 0);
}
