import type { Logger, Pod } from '@kubelet-kit/core';
import {
  type CgroupDriver,
  CgroupManager,
  type CgroupName,
  parseCgroupfsToCgroupName,
} from './cgroup-manager.js';
import { ensureNodeAllocatableCgroups, type NodeResourceAmounts } from './node-container-manager.js';
import { PodContainerManager } from './pod-container-manager.js';
import { QOSContainerManager } from './qos-container-manager.js';

// Upstream pkg/kubelet/cm/container_manager_linux.go, the part about cgroups-per-qos: kubepods,
// the QoS cgroups and the pods' cgroups, as the kubelet uses them.

/**
 * What the kubelet does with pod cgroups (upstream's container manager, cgroups-per-qos part).
 *
 * @public
 */
export interface PodCgroups {
  /** The sandbox's cgroup_parent for the pod. */
  cgroupParent(pod: Pod): string;
  ensurePod(pod: Pod): void;
  destroyPod(pod: Pod): void;
  cleanupOrphanedPodCgroups(
    known: ReadonlySet<string>,
    couldHaveRunningContainers: (uid: string) => boolean,
  ): void;
}

/** Options of {@link ContainerManager}. @internal */
export interface ContainerManagerOptions {
  /** Upstream --cgroup-driver, default cgroupfs (it must be the runtime's). */
  readonly cgroupDriver?: CgroupDriver | undefined;
  /** Upstream --cgroup-root, default `/`: kubepods goes below it. */
  readonly cgroupRoot?: string | undefined;
  /** Upstream --pod-max-pids; -1 (default) for none. */
  readonly podPidsLimit?: number | undefined;
  /** Upstream --enforce-node-allocatable, default `['pods']`. */
  readonly enforceNodeAllocatable?: readonly string[] | undefined;
  /** Upstream --cpu-cfs-quota, default true. */
  readonly cpuCFSQuota?: boolean | undefined;
  readonly capacity: NodeResourceAmounts;
  /** Capacity less --kube-reserved and --system-reserved. */
  readonly allocatable: NodeResourceAmounts;
  /** Default /sys/fs/cgroup. */
  readonly cgroupMountPoint?: string | undefined;
  readonly version?: 1 | 2 | undefined;
  /** The pods whose cgroups count (for burstable's shares). */
  readonly activePods: () => readonly Pod[];
  readonly logger: Logger;
}

/**
 * The node's pod cgroups: `kubepods` (at allocatable), `burstable`, `besteffort`, `pod<uid>`.
 *
 * @internal
 */
export class ContainerManager implements PodCgroups {
  readonly cgroups: CgroupManager;
  readonly kubepods: CgroupName;
  readonly qos: QOSContainerManager;
  readonly pods: PodContainerManager;
  readonly #o: ContainerManagerOptions;

  constructor(o: ContainerManagerOptions) {
    this.#o = o;
    const driver = o.cgroupDriver ?? 'cgroupfs';
    if (driver !== 'cgroupfs' && driver !== 'systemd')
      throw new Error(`--cgroup-driver: ${JSON.stringify(driver)} is not one of cgroupfs, systemd`);
    this.cgroups = new CgroupManager({
      driver,
      ...(o.cgroupMountPoint !== undefined ? { mountPoint: o.cgroupMountPoint } : {}),
      ...(o.version !== undefined ? { version: o.version } : {}),
      logger: o.logger,
    });
    const root = o.cgroupRoot ?? '/';
    // Upstream: with systemd the root is a slice name (`/` or e.g. `my.slice`).
    const rootName =
      driver === 'systemd'
        ? parseCgroupfsToCgroupName(root.replace(/\.slice$/, ''))
        : parseCgroupfsToCgroupName(root);
    this.kubepods = [...rootName, 'kubepods'];
    this.qos = new QOSContainerManager(this.cgroups, this.kubepods, o.activePods);
    this.pods = new PodContainerManager(
      this.cgroups,
      this.qos.info,
      {
        ...(o.cpuCFSQuota !== undefined ? { enforceCPULimits: o.cpuCFSQuota } : {}),
        ...(o.podPidsLimit !== undefined ? { podPidsLimit: o.podPidsLimit } : {}),
      },
      o.logger,
    );
  }

  /** Upstream `setupNode`: kubepods (enforcing allocatable) and the QoS cgroups made. */
  start(): void {
    ensureNodeAllocatableCgroups(
      this.cgroups,
      this.kubepods,
      this.#o.capacity,
      this.#o.allocatable,
      this.#o.enforceNodeAllocatable ?? ['pods'],
    );
    this.qos.start();
    this.#o.logger.info(
      {
        driver: this.cgroups.driver,
        version: this.cgroups.version,
        kubepods: this.cgroups.name(this.kubepods),
      },
      'pod cgroups ready',
    );
  }

  /** The sandbox's cgroup_parent. */
  cgroupParent(pod: Pod): string {
    return this.pods.getPodContainerName(pod).literal;
  }

  /** Before the sandbox starts (upstream syncPod): the QoS shares updated, the pod's cgroup made. */
  ensurePod(pod: Pod): void {
    this.qos.updateCgroups();
    this.pods.ensureExists(pod);
  }

  /** Upstream SyncTerminatedPod: the pod's cgroup removed (its processes killed first). */
  destroyPod(pod: Pod): void {
    const { name } = this.pods.getPodContainerName(pod);
    if (this.cgroups.exists(name)) this.pods.destroy(name);
    this.qos.updateCgroups();
  }

  /**
   * Upstream `cleanupOrphanedPodCgroups`: a pod cgroup of no known pod whose worker cannot have
   * running containers loses its processes, then itself.
   */
  cleanupOrphanedPodCgroups(
    known: ReadonlySet<string>,
    couldHaveRunningContainers: (uid: string) => boolean,
  ): void {
    for (const [uid, name] of this.pods.getAllPodsFromCgroups()) {
      if (known.has(uid) || couldHaveRunningContainers(uid)) continue;
      this.#o.logger.info({ uid, cgroup: this.cgroups.name(name) }, 'removing orphaned pod cgroup');
      try {
        this.pods.destroy(name);
      } catch (err) {
        // Processes take a moment to die: the next round tries again.
        this.#o.logger.warn({ uid, err: String(err) }, 'failed to remove orphaned pod cgroup');
      }
    }
  }
}
