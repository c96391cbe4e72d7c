import { type Container, quantityMilliValue, quantityValue } from '@kubelet-kit/core';
import type { LinuxContainerResources } from '@kubelet-kit/cri';

// CPU and memory of a container's Linux resources (upstream `helpers_linux.go`,
// `kuberuntime_container_linux.go`).

/** The fewest CPU shares a cgroup gets (upstream `MinShares`). @public */
export const minShares = 2;
/** The most CPU shares a cgroup gets (upstream `MaxShares`). @public */
export const maxShares = 262144;
export const sharesPerCPU = 1024;
export const milliCPUToCPU = 1000;
/** The default CFS period, in microseconds. @public */
export const quotaPeriod = 100000;
/** The smallest CFS quota the kernel accepts, in microseconds. */
export const minQuotaPeriod = 1000;

/** CPU shares for a request of `milliCPU`; 0 gives the minimum (upstream `MilliCPUToShares`). @public */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return minShares;
  const shares = Math.trunc((milliCPU * sharesPerCPU) / milliCPUToCPU);
  return Math.min(maxShares, Math.max(minShares, shares));
}

/** The CFS quota for a limit of `milliCPU` over `period`; 0 (no quota) without a limit. @public */
export function milliCPUToQuota(milliCPU: number, period: number): number {
  if (milliCPU === 0) return 0;
  const quota = Math.trunc((milliCPU * period) / milliCPUToCPU);
  return Math.max(quota, minQuotaPeriod);
}

/** Options of `calculateLinuxResources`. @internal */
export interface LinuxResourceOptions {
  /** Enforce CPU limits with CFS quota (upstream `cpuCFSQuota`, default true). */
  readonly cpuCFSQuota?: boolean;
  /** CFS period in microseconds (default 100000). */
  readonly cpuCFSQuotaPeriod?: number;
}

/** CPU shares from the request (the limit when no request), quota from the limit, memory limit. */
export function calculateLinuxResources(
  container: Container,
  options: LinuxResourceOptions = {},
): Pick<LinuxContainerResources, 'cpuShares' | 'cpuQuota' | 'cpuPeriod' | 'memoryLimitInBytes'> {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const cpuRequest = requests.cpu !== undefined ? quantityMilliValue(requests.cpu) : 0;
  const cpuLimit = limits.cpu !== undefined ? quantityMilliValue(limits.cpu) : 0;
  const memoryLimit = limits.memory !== undefined ? quantityValue(limits.memory) : 0;
  // Only a request that is absent falls back to the limit; an explicit 0 gets the minimum.
  const cpuShares = milliCPUToShares(requests.cpu === undefined ? cpuLimit : cpuRequest);
  const out: Pick<LinuxContainerResources, 'cpuShares' | 'cpuQuota' | 'cpuPeriod' | 'memoryLimitInBytes'> = {
    cpuShares,
    cpuQuota: 0,
    cpuPeriod: 0,
    memoryLimitInBytes: memoryLimit,
  };
  if (options.cpuCFSQuota ?? true) {
    const period = options.cpuCFSQuotaPeriod ?? quotaPeriod;
    out.cpuQuota = milliCPUToQuota(cpuLimit, period);
    out.cpuPeriod = period;
  }
  return out;
}
