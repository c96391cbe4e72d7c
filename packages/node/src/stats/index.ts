// The summary API's stats provider (upstream pkg/kubelet/stats and pkg/kubelet/server/stats).
// It lives in `node`, not a package of its own, because it reads the CRI, the pod manager and
// the volume manager together: a separate package would need an interface in core for each.

import type { Clock, Logger, MountedVolume, Pod } from '@kubelet-kit/core';
import { CpuUsageCache } from './cpu-usage-cache.js';
import { CriStatsProvider, type StatsImageService, type StatsRuntimeService } from './cri-stats-provider.js';
import { HostStats } from './host-stats.js';
import { SummaryProvider } from './summary.js';

/** Options of {@link createSummaryProvider}. @internal */
export interface CreateSummaryProviderOptions {
  readonly nodeName: string;
  readonly rootDirectory: string;
  readonly podLogsDirectory: string;
  readonly runtimeService: StatsRuntimeService;
  readonly imageService: StatsImageService;
  readonly getPods: () => readonly Pod[];
  readonly getMountedVolumesForPod: (podUid: string) => ReadonlyMap<string, MountedVolume>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** /proc of the host (tests point it elsewhere). */
  readonly procRoot?: string;
  readonly self?: () => { readonly cpuMicros: number; readonly rssBytes: number };
}

/** @internal */
export function createSummaryProvider(o: CreateSummaryProviderOptions): SummaryProvider {
  const cpuUsage = new CpuUsageCache(o.clock);
  const provider = new CriStatsProvider({
    runtimeService: o.runtimeService,
    imageService: o.imageService,
    getPods: o.getPods,
    getMountedVolumesForPod: o.getMountedVolumesForPod,
    podLogsDirectory: o.podLogsDirectory,
    cpuUsage,
    clock: o.clock,
    logger: o.logger,
  });
  return new SummaryProvider({
    nodeName: o.nodeName,
    rootDirectory: o.rootDirectory,
    provider,
    host: new HostStats(o.procRoot),
    cpuUsage,
    clock: o.clock,
    startTimeMs: o.clock.now(),
    ...(o.self ? { self: o.self } : {}),
  });
}

export { renderResourceMetrics } from './resource-metrics.js';
export type { SummaryProvider } from './summary.js';
