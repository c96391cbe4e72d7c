import type { Pod } from './core-v1.js';

/**
 * What a {@link PodUpdate} says about its pods (upstream `kubetypes.PodOperation`).
 * - `SET`: the full current set of pods of a source.
 * - `ADD`: pods new to the source.
 * - `UPDATE`: a meaningful change of spec, labels or non-local annotations.
 * - `DELETE`: a graceful delete: the pod now has a deletionTimestamp.
 * - `REMOVE`: the pod is gone from the source.
 * - `RECONCILE`: only the status differs.
 * @public
 */
export type PodOperation = 'SET' | 'ADD' | 'UPDATE' | 'DELETE' | 'REMOVE' | 'RECONCILE';

/** Well-known source names. Any other string names a caller's own source. @public */
export const FileSourceName = 'file';
/** @public */
export const HttpSourceName = 'http';
/** @public */
export const ApiserverSourceName = 'api';
/** The pseudo-source of a snapshot of all sources (`PodConfig.sync()`). @public */
export const AllSource = '*';

/** The name of a pod source: `file`, `http`, `api`, `*`, or a caller's own. @public */
export type PodSourceName = string;

/** One change of the desired pods, as one source reports it (upstream `kubetypes.PodUpdate`). @public */
export interface PodUpdate {
  readonly op: PodOperation;
  /** Never undefined; an empty array is meaningful (an empty SET or ADD marks a source as seen). */
  readonly pods: Pod[];
  readonly source: PodSourceName;
}

/** Why a pod worker is asked to sync (upstream `kubetypes.SyncPodType`). @public */
export type SyncPodType = 'sync' | 'update' | 'create' | 'kill';

/** Annotation: which source a pod came from. @public */
export const ConfigSourceAnnotationKey = 'kubernetes.io/config.source';
/** Annotation: present on mirror pods; its value is the static pod's hash. @public */
export const ConfigMirrorAnnotationKey = 'kubernetes.io/config.mirror';
/** Annotation: when the kubelet first saw the pod. @public */
export const ConfigFirstSeenAnnotationKey = 'kubernetes.io/config.seen';
/** Annotation: the static pod's UID (hash). @public */
export const ConfigHashAnnotationKey = 'kubernetes.io/config.hash';

/** The highest priority a user pod can have; above it pods are system-critical. @public */
export const SystemCriticalPriority = 2_000_000_000;
