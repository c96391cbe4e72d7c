// The agent's eviction options (upstream's eviction flags and KubeletConfiguration fields) and
// the eviction manager built from them, wired to the stats summary, pod workers, container and
// image GC, events and node status.
import fs from 'node:fs/promises';
import type { Clock, EventRecorder, Logger, Pod, Summary } from '@kubelet-kit/core';
import { podEventReference } from '@kubelet-kit/core';
import type { ImageServiceClient } from '@kubelet-kit/cri';
import {
  defaultEvictionHard,
  EvictionConfigError,
  EvictionManager,
  parseThresholdConfig,
  type Threshold,
} from '@kubelet-kit/eviction';
import type { KillPodFunc } from '@kubelet-kit/pod-workers';
import { parseGoDuration } from './go-duration.js';

/** The eviction options of AgentOptions, by their AgentOptions names. */
export interface EvictionAgentOptions {
  readonly evictionHard?: Readonly<Record<string, string>> | undefined;
  readonly evictionSoft?: Readonly<Record<string, string>> | undefined;
  readonly evictionSoftGracePeriod?: Readonly<Record<string, string>> | undefined;
  readonly evictionMinimumReclaim?: Readonly<Record<string, string>> | undefined;
  readonly evictionPressureTransitionPeriodMs?: number | undefined;
  readonly evictionMaxPodGracePeriod?: number | undefined;
  readonly evictionMonitoringPeriodMs?: number | undefined;
  readonly enforceNodeAllocatable?: readonly string[] | undefined;
}

/**
 * The thresholds the options describe (upstream `ParseThresholdConfig`); throws an
 * {@link EvictionConfigError} naming the flag. Without `evictionHard`, upstream's defaults.
 */
export function evictionThresholds(o: EvictionAgentOptions): Threshold[] {
  const grace: Record<string, number> = {};
  for (const [signal, text] of Object.entries(o.evictionSoftGracePeriod ?? {})) {
    const ms = parseGoDuration(text);
    if (ms === undefined) {
      throw new EvictionConfigError(
        `--eviction-soft-grace-period: ${signal}: invalid duration ${JSON.stringify(text)}`,
      );
    }
    grace[signal] = ms;
  }
  return parseThresholdConfig({
    enforceNodeAllocatable: o.enforceNodeAllocatable ?? ['pods'],
    evictionHard: o.evictionHard ?? defaultEvictionHard,
    evictionSoft: o.evictionSoft ?? {},
    evictionSoftGracePeriodMs: grace,
    evictionMinimumReclaim: o.evictionMinimumReclaim ?? {},
  });
}

/** What the eviction manager is wired to. */
export interface EvictionWiring {
  readonly rootDirectory: string;
  readonly nodeName: string;
  readonly summary: () => Promise<Summary>;
  /** The node's figures alone, read while no threshold acts and no pod has a storage limit. */
  readonly nodeSummary: () => Promise<Summary>;
  readonly imageService: ImageServiceClient;
  readonly activePods: () => readonly Pod[];
  readonly podCleanedUp: (pod: Pod) => boolean;
  readonly killPod: KillPodFunc;
  readonly deleteAllUnusedContainers: () => Promise<void>;
  readonly deleteUnusedImages: () => Promise<void>;
  readonly onEviction?: (signal: string) => void;
  readonly recorder: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * Upstream `HasDedicatedImageFs`: the runtime's image filesystem is on another device than the
 * root directory's.
 */
async function hasDedicatedImageFs(
  rootDirectory: string,
  imageService: ImageServiceClient,
): Promise<boolean> {
  const info = await imageService.imageFsInfo({});
  const mountpoint = info.imageFilesystems[0]?.fsId?.mountpoint;
  if (!mountpoint) return false;
  const [root, images] = await Promise.all([fs.stat(rootDirectory), fs.stat(mountpoint)]);
  return root.dev !== images.dev;
}

/** The eviction manager of `kubelet-kit run`, over the thresholds of {@link evictionThresholds}. */
export function createEvictionManager(
  o: EvictionAgentOptions,
  thresholds: readonly Threshold[],
  w: EvictionWiring,
): EvictionManager {
  const nodeRef = { kind: 'Node', name: w.nodeName, uid: w.nodeName };
  return new EvictionManager({
    thresholds,
    ...(o.evictionPressureTransitionPeriodMs !== undefined
      ? { pressureTransitionPeriodMs: o.evictionPressureTransitionPeriodMs }
      : {}),
    ...(o.evictionMaxPodGracePeriod !== undefined
      ? { maxPodGracePeriodSeconds: o.evictionMaxPodGracePeriod }
      : {}),
    summary: w.summary,
    nodeSummary: w.nodeSummary,
    hasDedicatedImageFs: () => hasDedicatedImageFs(w.rootDirectory, w.imageService),
    activePods: w.activePods,
    podCleanedUp: w.podCleanedUp,
    killPod: (r) =>
      w.killPod({
        pod: r.pod,
        isEvicted: r.isEvicted,
        gracePeriodOverride: r.gracePeriodOverride,
        statusFn: r.statusFn,
      }),
    reclaimers: {
      deleteAllUnusedContainers: w.deleteAllUnusedContainers,
      deleteUnusedImages: w.deleteUnusedImages,
    },
    events: {
      nodeEvent: (reason, message) => w.recorder.event(nodeRef, 'Warning', reason, message),
      // Upstream's annotations (offending containers, starved resource) are logged, not sent:
      // the recorder has no annotated events.
      podEvent: (pod, reason, message, annotations) => {
        w.logger.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, ...annotations }, message);
        w.recorder.event(podEventReference(pod), 'Warning', reason, message);
      },
    },
    ...(w.onEviction ? { onEviction: w.onEviction } : {}),
    clock: w.clock,
    logger: w.logger,
  });
}
