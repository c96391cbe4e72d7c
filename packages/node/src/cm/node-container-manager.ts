import type { CgroupManager, CgroupName } from './cgroup-manager.js';
import { milliCPUToShares, type ResourceConfig } from './helpers.js';

// Upstream pkg/kubelet/cm/node_container_manager_linux.go: the kubepods cgroup, limited to
// capacity, or with --enforce-node-allocatable=pods to capacity less the reservations.

/** Cpu (millicores), memory (bytes) and pids of the node, capacity or allocatable. @internal */
export interface NodeResourceAmounts {
  readonly cpuMilli: number;
  readonly memory: number;
  readonly pids?: number | undefined;
}

/** Upstream `getCgroupConfig`: shares for the cpu, a limit for memory and pids. @internal */
export function nodeCgroupConfig(r: NodeResourceAmounts): ResourceConfig {
  return {
    cpuShares: milliCPUToShares(r.cpuMilli),
    memory: r.memory,
    ...(r.pids !== undefined && r.pids > 0 ? { pidsLimit: r.pids } : {}),
  };
}

/**
 * Upstream `createNodeAllocatableCgroups` then `enforceNodeAllocatableCgroups`: kubepods made at
 * capacity, then given allocatable when `pods` is enforced.
 *
 * @internal
 */
export function ensureNodeAllocatableCgroups(
  cgroups: CgroupManager,
  kubepods: CgroupName,
  capacity: NodeResourceAmounts,
  allocatable: NodeResourceAmounts,
  enforce: readonly string[],
): void {
  if (!cgroups.exists(kubepods)) cgroups.create(kubepods, nodeCgroupConfig(capacity));
  cgroups.update(kubepods, nodeCgroupConfig(enforce.includes('pods') ? allocatable : capacity));
}
