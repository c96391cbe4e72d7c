// The summary API's types live in core (the eviction manager reads them too); node re-exports
// them where its stats code has always found them.
export type {
  ContainerStats,
  CPUStats,
  FsStats,
  InterfaceStats,
  MemoryStats,
  NetworkStats,
  NodeStats,
  PodReference,
  PodStats,
  ProcessStats,
  RlimitStats,
  RuntimeStats,
  Summary,
  VolumeStats,
} from '@kubelet-kit/core';
