import fs from 'node:fs';
import type { Logger, Pod } from '@kubelet-kit/core';
import { getPodQOS } from '@kubelet-kit/kuberuntime';
import type { CgroupManager, CgroupName } from './cgroup-manager.js';
import { type PodResourceConfigOptions, resourceConfigForPod } from './helpers.js';
import type { QOSContainersInfo } from './qos-container-manager.js';

// Upstream pkg/kubelet/cm/pod_container_manager_linux.go: one cgroup per pod, `pod<uid>`, under
// its QoS cgroup.

const podCgroupNamePrefix = 'pod';

/**
 * Upstream `podContainerManagerImpl`.
 *
 * @internal
 */
export class PodContainerManager {
  constructor(
    readonly cgroups: CgroupManager,
    readonly qos: QOSContainersInfo,
    readonly resources: PodResourceConfigOptions,
    readonly logger: Logger,
  ) {}

  /** Upstream `GetPodContainerName`: the driver-neutral name and the runtime's name of it. */
  getPodContainerName(pod: Pod): { name: CgroupName; literal: string } {
    const qos = getPodQOS(pod);
    const parent =
      qos === 'Guaranteed'
        ? this.qos.guaranteed
        : qos === 'Burstable'
          ? this.qos.burstable
          : this.qos.bestEffort;
    const name = [...parent, `${podCgroupNamePrefix}${pod.metadata?.uid ?? ''}`];
    return { name, literal: this.cgroups.name(name) };
  }

  /** Upstream `Exists`. */
  exists(pod: Pod): boolean {
    return this.cgroups.exists(this.getPodContainerName(pod).name);
  }

  /** Upstream `EnsureExists`: made with the pod's values when missing; an existing one is kept. */
  ensureExists(pod: Pod): void {
    const { name } = this.getPodContainerName(pod);
    if (this.cgroups.exists(name)) return;
    this.cgroups.create(name, resourceConfigForPod(pod, this.resources));
  }

  /** Upstream `Destroy`: the processes left killed, then the cgroup removed. */
  destroy(name: CgroupName): void {
    this.killAll(name);
    this.cgroups.destroy(name);
  }

  /** Upstream `tryKillingCgroupProcesses`. */
  killAll(name: CgroupName): void {
    for (const pid of this.cgroups.pids(name)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH')
          this.logger.warn({ pid, err: String(err) }, 'failed to kill a process of a pod cgroup');
      }
    }
  }

  /** Upstream `GetAllPodsFromCgroups`: pod UID to cgroup name, found under each QoS cgroup. */
  getAllPodsFromCgroups(): Map<string, CgroupName> {
    const out = new Map<string, CgroupName>();
    for (const parent of [this.qos.guaranteed, this.qos.burstable, this.qos.bestEffort]) {
      for (const dir of this.cgroups.children(parent)) {
        const uid = this.#podUID(parent, dir);
        if (uid !== undefined) out.set(uid, [...parent, `${podCgroupNamePrefix}${uid}`]);
      }
    }
    return out;
  }

  /** The UID of a child directory that is a pod cgroup (`pod<uid>` or `…-pod<uid_>.slice`). */
  #podUID(parent: CgroupName, dir: string): string | undefined {
    let base = dir;
    if (this.cgroups.driver === 'systemd') {
      const prefix = `${this.cgroups.name(parent)}`.replace(/\.slice$/, '');
      if (!base.endsWith('.slice')) return undefined;
      base = base.slice(0, -'.slice'.length);
      // Directly under the root slice the prefix is empty.
      if (parent.length > 0) {
        if (!base.startsWith(`${prefix}-`)) return undefined;
        base = base.slice(prefix.length + 1);
      }
      if (!base.startsWith(podCgroupNamePrefix)) return undefined;
      // systemd names have `_` for the UID's dashes.
      return base.slice(podCgroupNamePrefix.length).replaceAll('_', '-');
    }
    if (!base.startsWith(podCgroupNamePrefix) || base.length <= podCgroupNamePrefix.length) return undefined;
    return base.slice(podCgroupNamePrefix.length);
  }
}

/** Whether the host can have pod cgroups at all (the hierarchy is mounted). @internal */
export function cgroupsMounted(mountPoint: string): boolean {
  return fs.existsSync(mountPoint);
}
