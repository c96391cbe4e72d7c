import type { Clock } from '@kubelet-kit/core';
import type { CpuUsageCache } from './cpu-usage-cache.js';
import type { CriStatsProvider } from './cri-stats-provider.js';
import { rfc3339 } from './cri-stats-provider.js';
import { fsInfo } from './fs-usage.js';
import type { HostStats } from './host-stats.js';
import type {
  ContainerStats,
  CPUStats,
  MemoryStats,
  NetworkStats,
  NodeStats,
  PodStats,
  Summary,
} from './summary-types.js';

/** Options of {@link SummaryProvider}. @internal */
export interface SummaryProviderOptions {
  readonly nodeName: string;
  /** The agent's root directory: the node's `fs` is its filesystem (upstream's rootfs of --root-dir). */
  readonly rootDirectory: string;
  readonly provider: CriStatsProvider;
  readonly host: HostStats;
  readonly cpuUsage: CpuUsageCache;
  readonly clock: Clock;
  /** The agent's own start, for the `kubelet` system container. */
  readonly startTimeMs: number;
  /** The agent process's CPU time and memory (process.cpuUsage/memoryUsage by default). */
  readonly self?: () => { readonly cpuMicros: number; readonly rssBytes: number };
}

const nodeCpuKey = '/';
const kubeletCpuKey = 'kubelet';

/**
 * The summary API (upstream pkg/kubelet/server/stats `SummaryProvider`): the node from the host,
 * the pods from the CRI stats provider, the pods' totals as the `pods` system container.
 *
 * @internal
 */
export class SummaryProvider {
  readonly #o: SummaryProviderOptions;

  constructor(options: SummaryProviderOptions) {
    this.#o = options;
  }

  /** Upstream `Get(updateStats)`: everything. */
  async get(): Promise<Summary> {
    return this.#get(true);
  }

  /**
   * The node's figures of {@link SummaryProvider.get} (memory, filesystems, image filesystem,
   * rlimit) without the pods' stats, which cost a CRI stats call and a walk of every pod's
   * volumes and logs: what the eviction manager reads while no threshold is met.
   */
  async getNodeOnly(): Promise<Summary> {
    return this.#get(false);
  }

  async #get(withPods: boolean): Promise<Summary> {
    const [pods, node] = await Promise.all([
      withPods ? this.#o.provider.listPodStats() : Promise.resolve([]),
      this.#nodeBase(withPods),
    ]);
    const [fs, runtime, network, rlimit] = await Promise.all([
      fsInfo(this.#o.rootDirectory),
      this.#o.provider.imageFsStats(),
      this.#network(),
      this.#o.host.rlimit(),
    ]);
    const time = rfc3339(this.#o.clock.now());
    return {
      node: {
        ...node,
        systemContainers: withPods
          ? [...(node.systemContainers ?? []), podsContainer(pods, node.startTime)]
          : (node.systemContainers ?? []),
        ...(network ? { network } : {}),
        ...(fs
          ? {
              fs: {
                time,
                availableBytes: fs.availableBytes,
                capacityBytes: fs.capacityBytes,
                usedBytes: fs.usedBytes,
                inodesFree: fs.inodesFree,
                inodes: fs.inodes,
                inodesUsed: fs.inodes - fs.inodesFree,
              },
            }
          : {}),
        runtime,
        rlimit: { time, ...rlimit },
      },
      pods,
    };
  }

  /** Upstream `GetCPUAndMemoryStats`: the node's and pods' cpu and memory, no CPU sample update. */
  async getCPUAndMemoryStats(): Promise<Summary> {
    const [pods, node] = await Promise.all([
      this.#o.provider.listPodCpuAndMemoryStats(),
      this.#nodeBase(false),
    ]);
    return {
      node: {
        ...node,
        systemContainers: [...(node.systemContainers ?? []), podsContainer(pods, node.startTime)],
      },
      pods,
    };
  }

  async #nodeBase(update: boolean): Promise<NodeStats> {
    const now = this.#o.clock.now();
    const time = rfc3339(now);
    const nowNs = now * 1e6;
    const [cpu, memory, bootMs] = await Promise.all([
      this.#o.host.cpu(),
      this.#o.host.memory(),
      this.#o.host.bootTimeMs(),
    ]);
    const nodeCpu = this.#cpuStats(nodeCpuKey, time, nowNs, cpu.usageCoreNanoSeconds, update);
    const self = (this.#o.self ?? processSelf)();
    const kubelet: ContainerStats = {
      name: 'kubelet',
      startTime: rfc3339(this.#o.startTimeMs),
      cpu: this.#cpuStats(kubeletCpuKey, time, nowNs, self.cpuMicros * 1000, update),
      memory: { time, usageBytes: self.rssBytes, workingSetBytes: self.rssBytes, rssBytes: self.rssBytes },
    };
    const nodeMemory: MemoryStats = {
      time,
      availableBytes: memory.availableBytes,
      usageBytes: memory.usageBytes,
      workingSetBytes: memory.workingSetBytes,
      rssBytes: memory.rssBytes,
      pageFaults: memory.pageFaults,
      majorPageFaults: memory.majorPageFaults,
    };
    return {
      nodeName: this.#o.nodeName,
      systemContainers: [kubelet],
      startTime: rfc3339(bootMs),
      cpu: nodeCpu,
      memory: nodeMemory,
    };
  }

  #cpuStats(key: string, time: string, nowNs: number, total: number, update: boolean): CPUStats {
    const nano = this.#o.cpuUsage.usageNanoCores(key, nowNs, total, update);
    return { time, ...(nano !== undefined ? { usageNanoCores: nano } : {}), usageCoreNanoSeconds: total };
  }

  async #network(): Promise<NetworkStats | undefined> {
    const { interfaces, defaultName } = await this.#o.host.network();
    if (interfaces.length === 0) return undefined;
    const def = interfaces.find((i) => i.name === defaultName) ?? interfaces[0];
    return { time: rfc3339(this.#o.clock.now()), ...def, interfaces };
  }
}

function processSelf(): { cpuMicros: number; rssBytes: number } {
  const u = process.cpuUsage();
  return { cpuMicros: u.user + u.system, rssBytes: process.memoryUsage.rss() };
}

/** The `pods` system container: the pods' sums, as upstream's kubepods cgroup. */
function podsContainer(pods: readonly PodStats[], startTime: string): ContainerStats {
  let cores: number | undefined;
  let total = 0;
  let ws = 0;
  let usage = 0;
  let time = '';
  for (const p of pods) {
    if (p.cpu?.usageNanoCores !== undefined) cores = (cores ?? 0) + p.cpu.usageNanoCores;
    total += p.cpu?.usageCoreNanoSeconds ?? 0;
    ws += p.memory?.workingSetBytes ?? 0;
    usage += p.memory?.usageBytes ?? 0;
    if ((p.cpu?.time ?? '') > time) time = p.cpu?.time ?? '';
  }
  time ||= startTime;
  return {
    name: 'pods',
    startTime,
    cpu: { time, ...(cores !== undefined ? { usageNanoCores: cores } : {}), usageCoreNanoSeconds: total },
    memory: { time, usageBytes: usage, workingSetBytes: ws },
  };
}
