import path from 'node:path';
import type { Clock, Logger, MountedVolume, Pod } from '@kubelet-kit/core';
import {
  ContainerState,
  type ContainerStats as CriContainerStats,
  CriError,
  type PodSandboxStats as CriPodSandboxStats,
  type ImageServiceClient,
  PodSandboxState,
  type RuntimeServiceClient,
} from '@kubelet-kit/cri';
import type { CpuUsageCache } from './cpu-usage-cache.js';
import { diskUsage, type FsInfo, fsInfo } from './fs-usage.js';
import type {
  ContainerStats,
  CPUStats,
  FsStats,
  MemoryStats,
  NetworkStats,
  PodStats,
  VolumeStats,
} from './summary-types.js';

/** What the provider calls of the CRI. @internal */
export type StatsRuntimeService = Pick<
  RuntimeServiceClient,
  'listPodSandbox' | 'listContainers' | 'listPodSandboxStats' | 'listContainerStats'
>;

/** @internal */
export type StatsImageService = Pick<ImageServiceClient, 'imageFsInfo'>;

/** Options of {@link CriStatsProvider}. @internal */
export interface CriStatsProviderOptions {
  readonly runtimeService: StatsRuntimeService;
  readonly imageService: StatsImageService;
  /** The desired pods (the pod manager's), for their volumes' kinds. */
  readonly getPods: () => readonly Pod[];
  /** The volume manager's mounted volumes of a pod. */
  readonly getMountedVolumesForPod: (podUid: string) => ReadonlyMap<string, MountedVolume>;
  /** Root of the pods' log directories (upstream /var/log/pods). */
  readonly podLogsDirectory: string;
  readonly cpuUsage: CpuUsageCache;
  readonly clock: Clock;
  readonly logger: Logger;
}

// Labels the kubelet puts on sandboxes and containers (upstream types.Kubernetes*Label).
const podNameLabel = 'io.kubernetes.pod.name';
const podNamespaceLabel = 'io.kubernetes.pod.namespace';
const podUidLabel = 'io.kubernetes.pod.uid';
const containerNameLabel = 'io.kubernetes.container.name';

// Volumes that measure themselves with a du-like walk upstream (MetricsDu); hostPath and the
// like report nothing (MetricsNil).
const measuredVolumeKinds = ['emptyDir', 'configMap', 'secret', 'projected', 'downwardAPI'] as const;

/** RFC 3339 with seconds, as Go's metav1.Time marshals. @internal */
export const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const nsToTime = (ns: number) => rfc3339(Math.floor(ns / 1e6));

/**
 * Pod and container stats from the CRI, as upstream's `criStatsProvider` with
 * PodAndContainerStatsFromCRI: one ListPodSandboxStats (falling back to ListContainerStats
 * summed per sandbox when the runtime lacks it), plus ListPodSandbox and ListContainers for
 * names and start times; volumes and logs measured on the host.
 *
 * @internal
 */
export class CriStatsProvider {
  readonly #o: CriStatsProviderOptions;
  #sandboxStatsUnimplemented = false;
  #sandboxStatsFailed = false;

  constructor(options: CriStatsProviderOptions) {
    this.#o = options;
  }

  /** Upstream `ListPodStats`: everything, updating the CPU samples. */
  listPodStats(): Promise<PodStats[]> {
    return this.#listPodStats(true);
  }

  /** Upstream `ListPodCPUAndMemoryStats`: cpu and memory only, the CPU samples left as they are. */
  listPodCpuAndMemoryStats(): Promise<PodStats[]> {
    return this.#listPodStats(false);
  }

  /**
   * The runtime's image and container filesystems (upstream `ImageFsStats`): usage from
   * ImageFsInfo, capacity from statfs of its mountpoint. The container filesystem is the image
   * one when the runtime does not report it apart (containerd 1.6).
   */
  async imageFsStats(): Promise<{ imageFs?: FsStats; containerFs?: FsStats }> {
    const res = await this.#o.imageService.imageFsInfo({});
    const fsOf = async (
      u: (typeof res.imageFilesystems)[number] | undefined,
    ): Promise<FsStats | undefined> => {
      if (!u) return undefined;
      const info = u.fsId?.mountpoint ? await fsInfo(u.fsId.mountpoint) : undefined;
      return {
        time: nsToTime(u.timestamp),
        ...fsFields(info),
        ...(u.usedBytes ? { usedBytes: u.usedBytes.value } : {}),
        ...(u.inodesUsed ? { inodesUsed: u.inodesUsed.value } : {}),
      };
    };
    const imageFs = await fsOf(res.imageFilesystems[0]);
    const containerFs = (await fsOf(res.containerFilesystems[0])) ?? imageFs;
    return { ...(imageFs ? { imageFs } : {}), ...(containerFs ? { containerFs } : {}) };
  }

  async #sandboxStats(): Promise<CriPodSandboxStats[] | undefined> {
    if (this.#sandboxStatsUnimplemented) return undefined;
    try {
      return (await this.#o.runtimeService.listPodSandboxStats({})).stats;
    } catch (err) {
      if (err instanceof CriError && err.code === 'Unimplemented') {
        // A runtime without the call: fall back for good.
        this.#sandboxStatsUnimplemented = true;
        this.#o.logger.info({}, 'runtime lacks ListPodSandboxStats: summing ListContainerStats per sandbox');
        return undefined;
      }
      // containerd 1.6 fails the whole call for a sandbox without a cgroup parent (this agent
      // sets none: it has no pod cgroups), so the containers' stats are summed for this call.
      if (!this.#sandboxStatsFailed) {
        this.#sandboxStatsFailed = true;
        this.#o.logger.info(
          { err: String(err) },
          'ListPodSandboxStats failed: summing ListContainerStats per sandbox',
        );
      }
      return undefined;
    }
  }

  async #listPodStats(full: boolean): Promise<PodStats[]> {
    const rs = this.#o.runtimeService;
    const [sandboxes, containers, sandboxStats] = await Promise.all([
      rs.listPodSandbox({ filter: { state: { state: PodSandboxState.SANDBOX_READY } } }),
      rs.listContainers({ filter: { state: { state: ContainerState.CONTAINER_RUNNING } } }),
      this.#sandboxStats(),
    ]);
    const containerStats = sandboxStats
      ? sandboxStats.flatMap((s) => s.linux?.containers ?? [])
      : (await rs.listContainerStats({})).stats;
    const statsById = new Map(containerStats.map((c) => [c.attributes?.id ?? '', c]));
    const sandboxStatsById = new Map((sandboxStats ?? []).map((s) => [s.attributes?.id ?? '', s]));

    // One sandbox per pod: the newest, as upstream's removeTerminatedPods keeps.
    const newest = new Map<string, (typeof sandboxes.items)[number]>();
    for (const s of sandboxes.items) {
      const uid = s.metadata?.uid ?? s.labels[podUidLabel] ?? '';
      const prev = newest.get(uid);
      if (!prev || prev.createdAt < s.createdAt) newest.set(uid, s);
    }
    const containersBySandbox = new Map<string, (typeof containers.containers)[number][]>();
    for (const c of containers.containers) {
      const list = containersBySandbox.get(c.podSandboxId) ?? [];
      list.push(c);
      containersBySandbox.set(c.podSandboxId, list);
    }
    const podsByUid = new Map(this.#o.getPods().map((p) => [p.metadata?.uid ?? '', p]));

    const out: PodStats[] = [];
    for (const [uid, sandbox] of newest) {
      const podRef = {
        name: sandbox.metadata?.name ?? sandbox.labels[podNameLabel] ?? '',
        namespace: sandbox.metadata?.namespace ?? sandbox.labels[podNamespaceLabel] ?? '',
        uid,
      };
      // One container per name: the newest (upstream removeTerminatedContainers).
      const byName = new Map<string, (typeof containers.containers)[number]>();
      for (const c of containersBySandbox.get(sandbox.id) ?? []) {
        const name = c.metadata?.name ?? c.labels[containerNameLabel] ?? '';
        const prev = byName.get(name);
        if (!prev || prev.createdAt < c.createdAt) byName.set(name, c);
      }
      const logsFs = full ? await fsInfo(this.#o.podLogsDirectory) : undefined;
      const cs: ContainerStats[] = [];
      for (const [name, c] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
        const st = statsById.get(c.id);
        const cpu = st?.cpu ? this.#cpu(c.id, st.cpu, full) : undefined;
        const memory = st?.memory ? memoryOf(st.memory) : undefined;
        let rootfs: FsStats | undefined;
        let logs: FsStats | undefined;
        if (full) {
          rootfs = st ? await rootfsOf(st) : undefined;
          logs = await this.#logs(podRef, name, logsFs);
        }
        cs.push({
          name,
          startTime: nsToTime(c.createdAt),
          ...(cpu ? { cpu } : {}),
          ...(memory ? { memory } : {}),
          ...(rootfs ? { rootfs } : {}),
          ...(logs ? { logs } : {}),
        });
      }
      const ss = sandboxStatsById.get(sandbox.id);
      const pod: PodStats = {
        podRef,
        startTime: nsToTime(sandbox.createdAt),
        containers: cs,
        ...this.#podCpuAndMemory(sandbox.id, ss, cs, full),
      };
      if (!full) {
        out.push(pod);
        continue;
      }
      const network = networkOf(ss);
      const volume = await this.#volumes(podsByUid.get(uid), uid);
      const processCount = ss?.linux?.process?.processCount?.value;
      out.push({
        ...pod,
        ...(network ? { network } : {}),
        ...(volume.length > 0 ? { volume } : {}),
        'ephemeral-storage': ephemeralStorage(
          cs,
          volume,
          podsByUid.get(uid),
          logsFs,
          rfc3339(this.#o.clock.now()),
        ),
        ...(processCount !== undefined ? { process_stats: { process_count: processCount } } : {}),
      });
    }
    if (full) this.#o.cpuUsage.cleanup();
    return out;
  }

  #cpu(id: string, u: NonNullable<CriContainerStats['cpu']>, update: boolean): CPUStats {
    const total = u.usageCoreNanoSeconds?.value;
    const nano =
      u.usageNanoCores?.value ||
      (total !== undefined ? this.#o.cpuUsage.usageNanoCores(id, u.timestamp, total, update) : undefined);
    return {
      time: nsToTime(u.timestamp),
      ...(nano !== undefined ? { usageNanoCores: nano } : {}),
      ...(total !== undefined ? { usageCoreNanoSeconds: total } : {}),
    };
  }

  /** The sandbox's own cgroup when the runtime reports it, else its containers summed. */
  #podCpuAndMemory(
    sandboxId: string,
    ss: CriPodSandboxStats | undefined,
    cs: readonly ContainerStats[],
    update: boolean,
  ): { cpu?: CPUStats; memory?: MemoryStats } {
    const linux = ss?.linux;
    if (linux?.cpu || linux?.memory) {
      const cpu = linux.cpu ? this.#cpu(sandboxId, linux.cpu, update) : undefined;
      const memory = linux.memory ? memoryOf(linux.memory) : undefined;
      return { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) };
    }
    if (cs.length === 0) return {};
    const time =
      cs
        .map((c) => c.cpu?.time ?? c.memory?.time ?? '')
        .sort()
        .at(-1) ?? '';
    const sum = (f: (c: ContainerStats) => number | undefined) => {
      let n: number | undefined;
      for (const c of cs) {
        const v = f(c);
        if (v !== undefined) n = (n ?? 0) + v;
      }
      return n;
    };
    const opt = (k: string, v: number | undefined) => (v !== undefined ? { [k]: v } : {});
    return {
      cpu: {
        time,
        ...opt(
          'usageNanoCores',
          sum((c) => c.cpu?.usageNanoCores),
        ),
        ...opt(
          'usageCoreNanoSeconds',
          sum((c) => c.cpu?.usageCoreNanoSeconds),
        ),
      },
      memory: {
        time,
        ...opt(
          'usageBytes',
          sum((c) => c.memory?.usageBytes),
        ),
        ...opt(
          'workingSetBytes',
          sum((c) => c.memory?.workingSetBytes),
        ),
        ...opt(
          'rssBytes',
          sum((c) => c.memory?.rssBytes),
        ),
        ...opt(
          'pageFaults',
          sum((c) => c.memory?.pageFaults),
        ),
        ...opt(
          'majorPageFaults',
          sum((c) => c.memory?.majorPageFaults),
        ),
      },
    };
  }

  /** The container's log directory measured as upstream's getContainerLogStats. */
  async #logs(
    pod: { name: string; namespace: string; uid: string },
    container: string,
    logsFs: FsInfo | undefined,
  ): Promise<FsStats | undefined> {
    // kuberuntime's buildContainerLogsDirectory: <root>/<ns>_<name>_<uid>/<container>.
    const dir = path.join(this.#o.podLogsDirectory, `${pod.namespace}_${pod.name}_${pod.uid}`, container);
    const du = await diskUsage(dir);
    if (!du) return undefined;
    return {
      time: rfc3339(this.#o.clock.now()),
      ...fsFields(logsFs),
      usedBytes: du.bytes,
      inodesUsed: du.inodes,
    };
  }

  /** The pod's measurable volumes, each by a du-like walk of its host directory (upstream MetricsDu). */
  async #volumes(pod: Pod | undefined, uid: string): Promise<VolumeStats[]> {
    if (!pod) return [];
    const mounted = this.#o.getMountedVolumesForPod(uid);
    const out: VolumeStats[] = [];
    for (const v of pod.spec?.volumes ?? []) {
      const m = mounted.get(v.name);
      if (!m) continue;
      if (!measuredVolumeKinds.some((k) => v[k] !== undefined)) continue;
      const [du, info] = await Promise.all([diskUsage(m.hostPath), fsInfo(m.hostPath)]);
      if (!du) continue;
      out.push({
        name: v.name,
        time: rfc3339(this.#o.clock.now()),
        ...fsFields(info),
        usedBytes: du.bytes,
        inodesUsed: du.inodes,
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }
}

function fsFields(info: FsInfo | undefined): Partial<FsStats> {
  if (!info) return {};
  return {
    availableBytes: info.availableBytes,
    capacityBytes: info.capacityBytes,
    inodesFree: info.inodesFree,
    inodes: info.inodes,
  };
}

function memoryOf(m: NonNullable<CriContainerStats['memory']>): MemoryStats {
  const opt = (k: string, v: { value: number } | undefined) => (v ? { [k]: v.value } : {});
  return {
    time: nsToTime(m.timestamp),
    // Upstream leaves availableBytes out when the cgroup has no limit (the runtime sends 0).
    ...(m.availableBytes?.value ? { availableBytes: m.availableBytes.value } : {}),
    ...opt('usageBytes', m.usageBytes),
    ...opt('workingSetBytes', m.workingSetBytes),
    ...opt('rssBytes', m.rssBytes),
    ...opt('pageFaults', m.pageFaults),
    ...opt('majorPageFaults', m.majorPageFaults),
  };
}

async function rootfsOf(st: CriContainerStats): Promise<FsStats | undefined> {
  const w = st.writableLayer;
  if (!w) return undefined;
  const info = w.fsId?.mountpoint ? await fsInfo(w.fsId.mountpoint) : undefined;
  return {
    time: nsToTime(w.timestamp),
    ...fsFields(info),
    ...(w.usedBytes ? { usedBytes: w.usedBytes.value } : {}),
    ...(w.inodesUsed ? { inodesUsed: w.inodesUsed.value } : {}),
  };
}

function networkOf(ss: CriPodSandboxStats | undefined): NetworkStats | undefined {
  const n = ss?.linux?.network;
  if (!n) return undefined;
  const iface = (i: NonNullable<typeof n.defaultInterface>) => ({
    name: i.name,
    ...(i.rxBytes ? { rxBytes: i.rxBytes.value } : {}),
    ...(i.rxErrors ? { rxErrors: i.rxErrors.value } : {}),
    ...(i.txBytes ? { txBytes: i.txBytes.value } : {}),
    ...(i.txErrors ? { txErrors: i.txErrors.value } : {}),
  });
  const all = [...(n.defaultInterface ? [n.defaultInterface] : []), ...n.interfaces].map(iface);
  return {
    time: nsToTime(n.timestamp),
    ...(n.defaultInterface ? iface(n.defaultInterface) : {}),
    interfaces: all,
  };
}

/**
 * Upstream `calcEphemeralStorage`: the containers' writable layers and logs plus the pod's
 * emptyDir-like volumes (those on the node's disk; configMap, secret and the like count too, as
 * upstream's `ephemeralVolumes` filter keeps every non-persistent source).
 */
function ephemeralStorage(
  cs: readonly ContainerStats[],
  volumes: readonly VolumeStats[],
  pod: Pod | undefined,
  logsFs: FsInfo | undefined,
  now: string,
): FsStats {
  let used = 0;
  let inodes = 0;
  for (const c of cs) {
    used += (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0);
    inodes += (c.rootfs?.inodesUsed ?? 0) + (c.logs?.inodesUsed ?? 0);
  }
  const memoryBacked = new Set(
    (pod?.spec?.volumes ?? []).filter((v) => v.emptyDir?.medium === 'Memory').map((v) => v.name),
  );
  for (const v of volumes) {
    if (memoryBacked.has(v.name)) continue;
    used += v.usedBytes ?? 0;
    inodes += v.inodesUsed ?? 0;
  }
  const time =
    cs
      .map((c) => c.rootfs?.time ?? '')
      .sort()
      .at(-1) || now;
  return { time, ...fsFields(logsFs), usedBytes: used, inodesUsed: inodes };
}
