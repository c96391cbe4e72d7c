// The kubelet summary API's types (upstream k8s.io/kubelet/pkg/apis/stats/v1alpha1), JSON field
// names as its tags, shared by the stats provider, node status and the eviction manager. Times are
// RFC 3339 strings; absent figures are left out, as upstream's `omitempty` pointers.

/** @public */
export interface PodReference {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

/** @public */
export interface CPUStats {
  readonly time: string;
  readonly usageNanoCores?: number;
  readonly usageCoreNanoSeconds?: number;
}

/** @public */
export interface MemoryStats {
  readonly time: string;
  readonly availableBytes?: number;
  readonly usageBytes?: number;
  readonly workingSetBytes?: number;
  readonly rssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
}

/** @public */
export interface InterfaceStats {
  readonly name: string;
  readonly rxBytes?: number;
  readonly rxErrors?: number;
  readonly txBytes?: number;
  readonly txErrors?: number;
}

/** The default interface's figures inline, all interfaces in `interfaces` (upstream NetworkStats). @public */
export interface NetworkStats extends Partial<InterfaceStats> {
  readonly time: string;
  readonly interfaces?: readonly InterfaceStats[];
}

/** @public */
export interface FsStats {
  readonly time: string;
  readonly availableBytes?: number;
  readonly capacityBytes?: number;
  readonly usedBytes?: number;
  readonly inodesFree?: number;
  readonly inodes?: number;
  readonly inodesUsed?: number;
}

/** @public */
export interface VolumeStats extends FsStats {
  readonly name: string;
  readonly pvcRef?: { readonly name: string; readonly namespace: string };
}

/** @public */
export interface RuntimeStats {
  readonly imageFs?: FsStats;
  readonly containerFs?: FsStats;
}

/** @public */
export interface RlimitStats {
  readonly time: string;
  readonly maxpid?: number;
  readonly curproc?: number;
}

/** @public */
export interface ProcessStats {
  readonly process_count?: number;
}

/** @public */
export interface ContainerStats {
  readonly name: string;
  readonly startTime: string;
  readonly cpu?: CPUStats;
  readonly memory?: MemoryStats;
  readonly rootfs?: FsStats;
  readonly logs?: FsStats;
}

/** @public */
export interface PodStats {
  readonly podRef: PodReference;
  readonly startTime: string;
  readonly containers: readonly ContainerStats[];
  readonly cpu?: CPUStats;
  readonly memory?: MemoryStats;
  readonly network?: NetworkStats;
  readonly volume?: readonly VolumeStats[];
  readonly 'ephemeral-storage'?: FsStats;
  readonly process_stats?: ProcessStats;
}

/** @public */
export interface NodeStats {
  readonly nodeName: string;
  readonly systemContainers?: readonly ContainerStats[];
  readonly startTime: string;
  readonly cpu?: CPUStats;
  readonly memory?: MemoryStats;
  readonly network?: NetworkStats;
  readonly fs?: FsStats;
  readonly runtime?: RuntimeStats;
  readonly rlimit?: RlimitStats;
}

/** `GET /stats/summary`. @public */
export interface Summary {
  readonly node: NodeStats;
  readonly pods: readonly PodStats[];
}
