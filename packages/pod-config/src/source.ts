import type { PodSourceName, PodUpdate } from '@kubelet-kit/core';

/**
 * Where a source delivers its updates. The returned promise resolves once the update has been
 * merged and the merged stream has room again; a source that awaits it gets back-pressure, one
 * that does not still loses nothing (see `PodConfig`). The `source` field of the update is
 * ignored: the sink already knows which source it belongs to.
 *
 * @public
 */
export type PodSourceSink = (update: PodUpdate) => void | Promise<void>;

/**
 * One source of desired pods (file, http, apiserver, an embedder's own). A source sends full
 * SETs of its pods (it may also send ADD/UPDATE/DELETE/REMOVE); `PodConfig` turns them into the
 * incremental stream. Its first SET, even an empty one, marks the source as seen.
 *
 * @public
 */
export interface PodSource {
  /** The source name pods are annotated with (`kubernetes.io/config.source`): `file`, `http`, `api`, … */
  readonly name: PodSourceName;
  /** Starts producing updates into `sink`; called once. */
  start(sink: PodSourceSink): void | Promise<void>;
  /** Stops all timers, watches and requests; no update is sent after it resolves. */
  stop(): Promise<void>;
}
