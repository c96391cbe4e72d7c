import type { Pod } from '@kubelet-kit/core';
import { getPodQOS } from '@kubelet-kit/kuberuntime';
import type { CgroupManager, CgroupName } from './cgroup-manager.js';
import { milliCPUToShares, minShares, podCPURequestMilli } from './helpers.js';

// Upstream pkg/kubelet/cm/qos_container_manager_linux.go: the burstable and besteffort cgroups
// under kubepods (Guaranteed pods sit in kubepods itself). Memory reservations (QOSReserved)
// are off, as upstream's default.

/** The QoS cgroups' names. @internal */
export interface QOSContainersInfo {
  readonly guaranteed: CgroupName;
  readonly burstable: CgroupName;
  readonly bestEffort: CgroupName;
}

/** @internal */
export function qosContainersInfo(kubepods: CgroupName): QOSContainersInfo {
  return {
    guaranteed: kubepods,
    burstable: [...kubepods, 'burstable'],
    bestEffort: [...kubepods, 'besteffort'],
  };
}

/**
 * Upstream `qosContainerManagerImpl`: makes the QoS cgroups at start and keeps burstable's cpu
 * shares at the sum of its pods' requests.
 *
 * @internal
 */
export class QOSContainerManager {
  readonly info: QOSContainersInfo;

  constructor(
    readonly cgroups: CgroupManager,
    kubepods: CgroupName,
    readonly activePods: () => readonly Pod[],
  ) {
    this.info = qosContainersInfo(kubepods);
  }

  /** Upstream `Start`: both QoS cgroups made (BestEffort at the minimum shares). */
  start(): void {
    if (!this.cgroups.exists(this.info.bestEffort))
      this.cgroups.create(this.info.bestEffort, { cpuShares: minShares });
    if (!this.cgroups.exists(this.info.burstable)) this.cgroups.create(this.info.burstable, {});
    this.updateCgroups();
  }

  /** Upstream `UpdateCgroups` / `setCPUCgroupConfig`. */
  updateCgroups(): void {
    let burstableMilli = 0;
    for (const pod of this.activePods())
      if (getPodQOS(pod) === 'Burstable') burstableMilli += podCPURequestMilli(pod);
    this.cgroups.update(this.info.bestEffort, { cpuShares: minShares });
    this.cgroups.update(this.info.burstable, { cpuShares: milliCPUToShares(burstableMilli) });
  }
}
