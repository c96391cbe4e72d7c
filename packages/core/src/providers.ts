import type { ConfigMap, Secret } from 'kubernetes-types/core/v1.js';
import type { RuntimeClass } from 'kubernetes-types/node/v1.js';
import type { Pod, PodStatus } from './core-v1.js';
import type { RuntimePodStatus } from './runtime.js';

// Interfaces through which one manager uses another without importing its implementation.

/** The API status the kubelet computed for a pod (upstream `status.PodStatusProvider`). @public */
export interface PodStatusProvider {
  /** Accepts the UID of a static pod or of its mirror pod. */
  getPodStatus(uid: string): PodStatus | undefined;
}

/** One entry of the runtime pod status cache. @public */
export interface CachedPodStatus {
  readonly status: RuntimePodStatus | undefined;
  readonly error: Error | undefined;
  /** When this status was read from the runtime (epoch ms). */
  readonly modified: number;
}

/** The runtime pod status cache that the PLEG keeps (upstream `kubecontainer.Cache`). @public */
export interface PodStatusCache {
  /** The cached entry; an empty status when the pod is not known. */
  get(uid: string): CachedPodStatus;
  /**
   * Resolves once the cache holds a status for `uid` read after `minTime` (epoch ms), or once
   * the whole cache has been refreshed at or past it; this keeps a worker from acting on a
   * status older than its last change.
   */
  getNewerThan(uid: string, minTime: number, signal?: AbortSignal): Promise<CachedPodStatus>;
}

/** A probe's result, as the results managers hold them. @public */
export type ProbeResult = 'Success' | 'Failure' | 'Unknown';

/** One change of a stored probe result (upstream `results.Update`). @public */
export interface ProbeResultUpdate {
  /** The container ID as `type://id`. */
  readonly containerId: string;
  readonly result: ProbeResult;
  readonly podUid: string;
}

/**
 * What the node can give pods (its allocatable resources), as admission and the downward API
 * read it.
 * @public
 */
export interface NodeAllocatable {
  /** Cores. */
  readonly cpu: number;
  /** Bytes. */
  readonly memory: number;
  /** How many pods. */
  readonly pods: number;
  /** Bytes of local ephemeral storage; without it, ephemeral-storage requests are not checked. */
  readonly ephemeralStorage?: number;
  /**
   * Scalar resources by name: extended resources (`example.com/foo`, whole units) and hugepages
   * (`hugepages-2Mi`, bytes). An extended resource absent here is one the node does not know.
   */
  readonly scalarResources?: Readonly<Record<string, number>>;
}

/** A read-only view of one probe type's results, by container ID (`type://id`). @public */
export interface ProbeResultsReader {
  get(containerId: string): ProbeResult | undefined;
}

/** A volume mounted for a pod, as the runtime needs it for container mounts. @public */
export interface MountedVolume {
  /** Where the volume's content is on the host. */
  readonly hostPath: string;
  readonly readOnly: boolean;
  /** Whether a SELinux relabel was done (upstream's SELinuxLabeled). */
  readonly selinuxRelabel?: boolean;
}

/** The volumes mounted for pods (upstream `VolumeManager.GetMountedVolumesForPod`). @public */
export interface VolumeProvider {
  /** Mounted volumes of the pod by volume name; empty when none. */
  getMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume>;
}

/** A container's subPath of a volume, to be bound safely (upstream `subpath.Subpath`). @public */
export interface Subpath {
  /** The volumeMount's index in the container: names the bind target. */
  readonly volumeMountIndex: number;
  /** The volume's host path joined with the subPath, as text: not yet resolved. */
  readonly path: string;
  /** The pod spec's name of the volume. */
  readonly volumeName: string;
  /** The volume's host path. */
  readonly volumePath: string;
  /** `<root-dir>/pods/<uid>`: bind targets go under `volume-subpaths/`. */
  readonly podDir: string;
  readonly containerName: string;
}

/**
 * Binds subPaths of volumes without following a link out of them (upstream
 * `subpath.Interface`, CVE-2017-1002101). The volume manager implements it; the runtime manager
 * uses it for container mounts.
 * @public
 */
export interface Subpather {
  /**
   * Creates `subdir` (relative) under `base` with mode `perm`, never following a link out of
   * `base` (upstream `SafeMakeDir`).
   */
  safeMakeDir(subdir: string, base: string, perm: number): Promise<void>;
  /**
   * Opens `subpath.path` one element at a time inside the volume and bind-mounts what it opened
   * to `<podDir>/volume-subpaths/<volume>/<container>/<index>`; returns that path, for the
   * runtime to mount (upstream `PrepareSafeSubpath`).
   */
  prepareSafeSubpath(subpath: Subpath): Promise<string>;
  /** Unmounts and removes the pod's bind targets of one volume (upstream `CleanSubPaths`). */
  cleanSubPaths(podDir: string, volumeName: string): Promise<void>;
}

/**
 * Reads ConfigMaps and Secrets for env vars and volumes; undefined when the object does not exist.
 * @public
 */
export interface ObjectGetter {
  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined>;
  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined>;
}

/**
 * Where a pod is in its lifecycle, as the pod workers know it (upstream's `podStateProvider`):
 * what garbage collection and the volume manager may remove. The pod workers implement it.
 * @public
 */
export interface PodStateProvider {
  /** True once the pod's containers are being (or have been) stopped: no new mounts or starts. */
  shouldPodContainersBeTerminating(uid: string): boolean;
  /** True once no container of the pod runs any more: its runtime leftovers and volumes may go. */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
  /** True when the pod is gone for good (deleted and terminated, evicted, or unknown): all its content may go. */
  shouldPodContentBeRemoved(uid: string): boolean;
}

/**
 * Looks RuntimeClasses (`node.k8s.io/v1`) up by name: their handler, overhead and scheduling
 * (upstream's RuntimeClass lister, read by `runtimeclass.Manager`). Implementations: a local list
 * loaded from files (node's `--runtime-classes`); an API-server informer can implement it too.
 * @public
 */
export interface RuntimeClassGetter {
  /** The RuntimeClass of that name; undefined when there is none. */
  getRuntimeClass(name: string): RuntimeClass | undefined;
}

/**
 * Creates and deletes the mirror pods of static pods on the API server (upstream
 * `pod.MirrorClient`), so that the cluster sees the static pods this node runs.
 *
 * @public
 */
export interface MirrorClient {
  /**
   * Creates the mirror pod of a static pod: a copy whose `kubernetes.io/config.mirror`
   * annotation holds the static pod's hash, owned by this node's Node object. A mirror that
   * exists already counts as made (its arrival from the API server makes it known); other
   * failures reject.
   */
  createMirrorPod(pod: Pod): Promise<void>;
  /**
   * Deletes the mirror pod with this full name (`name_namespace`) at once (grace period 0), only
   * if its UID is `uid` when one is given. Resolves true when it was deleted, false when it was
   * gone or had another UID.
   */
  deleteMirrorPod(podFullName: string, uid: string | undefined): Promise<boolean>;
}
