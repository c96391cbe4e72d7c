import path from 'node:path';
import {
  type Clock,
  CodedError,
  type Logger,
  type NodeAllocatable,
  type ObjectGetter,
  type Pod,
  type TokenGetter,
  type Volume,
} from '@kubelet-kit/core';
import type { Mounter } from './mount.js';

/**
 * What a host path policy is asked about.
 *
 * @public
 */
export interface HostPathRequest {
  readonly pod: Pod;
  readonly volumeName: string;
  readonly path: string;
  readonly type: string;
}

/**
 * A host path policy's answer.
 *
 * @public
 */
export interface HostPathDecision {
  readonly allowed: boolean;
  readonly reason?: string;
}

/**
 * Lets an embedder refuse host paths (for example everything outside `/srv`).
 *
 * @public
 */
export type HostPathPolicy = (request: HostPathRequest) => HostPathDecision | Promise<HostPathDecision>;

/**
 * What plugins get from the volume manager (upstream `volume.VolumeHost`).
 *
 * @public
 */
export interface VolumeHost {
  readonly logger: Logger;
  readonly clock: Clock;
  readonly mounter: Mounter;
  readonly objectGetter?: ObjectGetter;
  /** Service account tokens (the token manager); from core since 0.2. */
  readonly tokenGetter?: TokenGetter;
  readonly hostPathPolicy?: HostPathPolicy;
  readonly nodeName?: string;
  /** Node resources the downward API falls back to when a container sets no limit. */
  readonly nodeAllocatable: () => NodeAllocatable;
}

/**
 * One volume of one pod, as a plugin sees it.
 *
 * @public
 */
export interface VolumeSpec {
  readonly pod: Pod;
  readonly volume: Volume;
  /** `<root>/pods/<uid>/volumes/<escaped plugin name>/<volume name>`. */
  readonly podVolumeDir: string;
}

/**
 * A volume type (upstream `volume.VolumePlugin` with its Mounter and Unmounter).
 *
 * @public
 */
export interface VolumePlugin {
  /** Upstream's plugin name, e.g. `kubernetes.io/configmap`. */
  readonly name: string;
  /** Whether the content is re-projected whenever the pod is reprocessed (API data volumes). */
  readonly requiresRemount: boolean;
  /** Whether containers must see the volume read-only (API data volumes are). */
  readonly readOnly: boolean;
  /** Whether the plugin keeps its content in the pod's volume directory (so it can be rebuilt after a restart). */
  readonly usesPodVolumeDir: boolean;
  canSupport(volume: Volume): boolean;
  /** Where the content is on the host. */
  getPath(spec: VolumeSpec): string;
  /** Makes the volume ready; must be idempotent, it also runs to refresh content. */
  setUp(spec: VolumeSpec, signal?: AbortSignal): Promise<void>;
  /** Undoes setUp given only the volume directory (works for volumes rebuilt from disk). */
  tearDown(podVolumeDir: string, signal?: AbortSignal): Promise<void>;
}

/**
 * `kubernetes.io/empty-dir` → `kubernetes.io~empty-dir`, as upstream names plugin directories.
 *
 * @public
 */
export function escapePluginName(name: string): string {
  return name.replaceAll('/', '~');
}

/**
 * The reverse of {@link escapePluginName}.
 *
 * @public
 */
export function unescapePluginName(name: string): string {
  return name.replaceAll('~', '/');
}

/**
 * `<root>/pods/<uid>/volumes/<escaped plugin>/<volume>`.
 *
 * @public
 */
export function podVolumeDir(
  rootDirectory: string,
  podUid: string,
  pluginName: string,
  volumeName: string,
): string {
  return path.join(rootDirectory, 'pods', podUid, 'volumes', escapePluginName(pluginName), volumeName);
}

/**
 * Thrown by a plugin's setUp; `reason` is upstream's event reason.
 *
 * @public
 */
export class VolumeSetUpError extends CodedError<string> {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super('VolumeSetUpError', code, message, options);
  }
}
