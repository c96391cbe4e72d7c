import path from 'node:path';
import type { Clock, EventRecorder, Logger } from '@kubelet-kit/core';
import { FileSource, HttpSource, type PodConfig, type PodSource } from '@kubelet-kit/pod-config';
import type { PodConfigView } from './deps.js';

/** Options of {@link createPodSources}: the agent's source flags. */
export interface PodSourcesOptions {
  /** Upstream --pod-manifest-path. */
  readonly podManifestPath?: string | undefined;
  /** Upstream --manifest-url. */
  readonly manifestUrl?: string | undefined;
  /** Upstream --file-check-frequency. */
  readonly fileCheckFrequencyMs?: number | undefined;
  /** Let static pods reference ConfigMaps, Secrets and the like (upstream forbids it). */
  readonly allowStaticPodApiReferences?: boolean | undefined;
  /** The API server's source (from the API clients), after the file and URL ones. */
  readonly apiserverSource?: PodSource | undefined;
  /** The embedder's own sources, last. */
  readonly sources?: readonly PodSource[] | undefined;
  readonly nodeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly recorder: EventRecorder;
  /** Each rejected manifest and source error. */
  readonly onError: (err: Error) => void;
}

/**
 * The agent's pod sources, in upstream's order (file, URL, API server), then the embedder's.
 *
 * @internal
 */
export function createPodSources(options: PodSourcesOptions): PodSource[] {
  const { nodeName, clock, logger, recorder, onError } = options;
  const sources: PodSource[] = [];
  const preventStaticPodAPIReferences = !options.allowStaticPodApiReferences;
  if (options.podManifestPath) {
    sources.push(
      new FileSource({
        path: path.resolve(options.podManifestPath),
        nodeName,
        clock,
        logger: logger.child({ source: 'file' }),
        recorder,
        preventStaticPodAPIReferences,
        onError,
        ...(options.fileCheckFrequencyMs !== undefined ? { period: options.fileCheckFrequencyMs } : {}),
      }),
    );
  }
  if (options.manifestUrl) {
    sources.push(
      new HttpSource({
        url: options.manifestUrl,
        nodeName,
        clock,
        logger: logger.child({ source: 'http' }),
        recorder,
        preventStaticPodAPIReferences,
        onError,
      }),
    );
  }
  if (options.apiserverSource) sources.push(options.apiserverSource);
  sources.push(...(options.sources ?? []));
  return sources;
}

/**
 * The kubelet's view of `podConfig` over `sources`: they are added when the kubelet starts, and
 * all sources count as seen once each of them has sent its first SET.
 *
 * @internal
 */
export function podConfigView(podConfig: PodConfig, sources: readonly PodSource[]): PodConfigView {
  return {
    updates: (signal) => podConfig.updates(signal ? { signal } : {}),
    seenAllSources: () => podConfig.seenAllSources(podConfig.sources),
    start: async () => {
      for (const s of sources) await podConfig.addSource(s);
    },
    stop: () => podConfig.stop(),
  };
}

/**
 * The agent's bounded list of source errors (newest last), each also logged and handed to
 * `onSourceError`.
 *
 * @internal
 */
export function sourceErrorLog(
  logger: Logger,
  onSourceError: ((error: Error) => void) | undefined,
  limit = 200,
): { readonly errors: readonly string[]; readonly onError: (err: Error) => void } {
  const errors: string[] = [];
  return {
    errors,
    onError: (err) => {
      errors.push(err.message);
      if (errors.length > limit) errors.shift();
      logger.warn({ err: err.message }, 'pod source error');
      onSourceError?.(err);
    },
  };
}
