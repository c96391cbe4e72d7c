import {
  buildPodFullName,
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  getPodFullName,
  getPodUID,
  isMirrorPod,
  isStaticPod,
  type Pod,
} from '@kubelet-kit/core';

/** What {@link PodManager.getPodAndMirrorPod} returns. @public */
export interface PodAndMirrorPod {
  /** The regular or static pod; undefined when only the mirror is known. */
  readonly pod: Pod | undefined;
  /** The mirror pod; undefined when the pod is not static or its mirror is not known. */
  readonly mirrorPod: Pod | undefined;
  /** True when the pod asked about was itself a mirror pod. */
  readonly wasMirror: boolean;
}

/** What {@link PodManager.getPodsAndMirrorPods} returns. @public */
export interface PodsAndMirrorPods {
  /** Regular and static pods. */
  readonly pods: Pod[];
  readonly mirrorPods: Pod[];
  /** Full names (`name_namespace`) of mirror pods with no pod of the same full name. */
  readonly orphanedMirrorPodFullnames: string[];
}

/** What {@link PodManager.getUIDTranslations} returns. @public */
export interface UIDTranslations {
  /** Static pod UID → mirror pod UID; `''` for a static pod that has no mirror pod yet. */
  readonly podToMirror: Map<string, string>;
  /** Mirror pod UID → static pod UID. */
  readonly mirrorToPod: Map<string, string>;
}

/**
 * The pods the kubelet wants to run, and the pairing of static pods with their mirror pods
 * (upstream `pod.Manager`). A mirror pod is the API server's copy of a static pod; the two share
 * a full name but not a UID.
 *
 * Reads are snapshots: every returned array or map is fresh and the caller may keep or mutate
 * it, but the pods in it are the manager's own objects (not deep-copied), so treat them as
 * read-only.
 * @public
 */
export interface PodManager {
  /** The regular and static pods (never mirror pods). */
  getPods(): Pod[];
  /** Regular and static pods, mirror pods, and the full names of orphaned mirror pods. */
  getPodsAndMirrorPods(): PodsAndMirrorPods;
  /** The non-mirror pod with this full name (`name_namespace`). */
  getPodByFullName(podFullName: string): Pod | undefined;
  /** The non-mirror pod with this namespace and name. */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** The non-mirror pod with this UID; a mirror pod's UID finds nothing. */
  getPodByUID(uid: string): Pod | undefined;
  /** The static pod of a mirror pod (by full name). */
  getPodByMirrorPod(mirrorPod: Pod): Pod | undefined;
  /** The mirror pod of a static pod (by full name). */
  getMirrorPodByPod(pod: Pod): Pod | undefined;
  /** For a mirror pod: its static pod and itself; for any other pod: itself and its mirror. */
  getPodAndMirrorPod(pod: Pod): PodAndMirrorPod;
  /** Replaces every pod held with `pods`. */
  setPods(pods: readonly Pod[]): void;
  /** Adds a pod or a mirror pod (the same as {@link PodManager.updatePod}). */
  addPod(pod: Pod): void;
  /** Stores the pod under its UID and full name, replacing what was there. */
  updatePod(pod: Pod): void;
  /**
   * Forgets the pod. A mirror pod also loses its UID translation; a static pod keeps it (as
   * upstream does) until its mirror is removed.
   */
  removePod(pod: Pod): void;
  /** A mirror pod's UID becomes its static pod's UID; any other UID, `''` included, is returned as is. */
  translatePodUID(uid: string): string;
  /** Both directions of the static ↔ mirror UID mapping. */
  getUIDTranslations(): UIDTranslations;
}

/**
 * True when `mirrorPod` mirrors `pod`: same name and namespace, and the mirror's
 * `kubernetes.io/config.mirror` annotation equals the pod's `kubernetes.io/config.hash`.
 * @internal
 */
export function isMirrorPodOf(mirrorPod: Pod, pod: Pod): boolean {
  if (pod.metadata?.name !== mirrorPod.metadata?.name) return false;
  if (pod.metadata?.namespace !== mirrorPod.metadata?.namespace) return false;
  const hash = mirrorPod.metadata?.annotations?.[ConfigMirrorAnnotationKey];
  if (hash === undefined) return false;
  return hash === getPodHash(pod);
}

/** The static pod's hash, as its mirror pod records it: the config.hash annotation, or `''`. */
export function getPodHash(pod: Pod): string {
  return pod.metadata?.annotations?.[ConfigHashAnnotationKey] ?? '';
}

/** Options of {@link BasicPodManager}. @public */
export interface BasicPodManagerOptions {
  /** An initial set, as if passed to {@link BasicPodManager.setPods}. */
  readonly pods?: readonly Pod[];
}

/**
 * The in-memory {@link PodManager} (upstream `basicManager`). It is a plain data structure with
 * no I/O, so tests can use it directly as their fake.
 * @public
 */
export class BasicPodManager implements PodManager {
  #podByUID = new Map<string, Pod>();
  /**
   * `#podByUID`'s values as an array, made on the first read after a change: callers ask for
   * every pod far more often than pods change (once per sync of each pod, by some), and copying
   * an array is several times cheaper than walking the map.
   */
  #pods: Pod[] | undefined;
  #podByFullName = new Map<string, Pod>();
  #mirrorPodByUID = new Map<string, Pod>();
  #mirrorPodByFullName = new Map<string, Pod>();
  /** Mirror UID → static UID. */
  #translationByUID = new Map<string, string>();

  constructor(options: BasicPodManagerOptions = {}) {
    if (options.pods) this.#updatePodsInternal(options.pods);
  }

  getPods(): Pod[] {
    return this.#podList().slice();
  }

  getPodsAndMirrorPods(): PodsAndMirrorPods {
    const orphanedMirrorPodFullnames: string[] = [];
    for (const fullName of this.#mirrorPodByFullName.keys()) {
      if (!this.#podByFullName.has(fullName)) orphanedMirrorPodFullnames.push(fullName);
    }
    return {
      pods: this.#podList().slice(),
      mirrorPods: [...this.#mirrorPodByUID.values()],
      orphanedMirrorPodFullnames,
    };
  }

  getPodByFullName(podFullName: string): Pod | undefined {
    return this.#podByFullName.get(podFullName);
  }

  getPodByName(namespace: string, name: string): Pod | undefined {
    return this.#podByFullName.get(buildPodFullName(name, namespace));
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.#podByUID.get(uid);
  }

  getPodByMirrorPod(mirrorPod: Pod): Pod | undefined {
    return this.#podByFullName.get(getPodFullName(mirrorPod));
  }

  getMirrorPodByPod(pod: Pod): Pod | undefined {
    return this.#mirrorPodByFullName.get(getPodFullName(pod));
  }

  getPodAndMirrorPod(pod: Pod): PodAndMirrorPod {
    const fullName = getPodFullName(pod);
    if (isMirrorPod(pod)) {
      return { pod: this.#podByFullName.get(fullName), mirrorPod: pod, wasMirror: true };
    }
    return { pod, mirrorPod: this.#mirrorPodByFullName.get(fullName), wasMirror: false };
  }

  setPods(pods: readonly Pod[]): void {
    this.#podByUID = new Map();
    this.#pods = undefined;
    this.#podByFullName = new Map();
    this.#mirrorPodByUID = new Map();
    this.#mirrorPodByFullName = new Map();
    this.#translationByUID = new Map();
    this.#updatePodsInternal(pods);
  }

  addPod(pod: Pod): void {
    this.updatePod(pod);
  }

  updatePod(pod: Pod): void {
    this.#updatePodsInternal([pod]);
  }

  removePod(pod: Pod): void {
    const fullName = getPodFullName(pod);
    const uid = getPodUID(pod);
    if (isMirrorPod(pod)) {
      this.#mirrorPodByUID.delete(uid);
      this.#mirrorPodByFullName.delete(fullName);
      this.#translationByUID.delete(uid);
    } else {
      this.#podByUID.delete(uid);
      this.#pods = undefined;
      this.#podByFullName.delete(fullName);
    }
  }

  translatePodUID(uid: string): string {
    if (uid === '') return uid;
    return this.#translationByUID.get(uid) ?? uid;
  }

  getUIDTranslations(): UIDTranslations {
    const podToMirror = new Map<string, string>();
    const mirrorToPod = new Map<string, string>();
    // Every static pod appears, mapped to '' until its mirror exists, so a caller can tell
    // "static without mirror" from "not static".
    for (const [uid, pod] of this.#podByUID) {
      if (isStaticPod(pod)) podToMirror.set(uid, '');
    }
    for (const [mirrorUID, podUID] of this.#translationByUID) {
      mirrorToPod.set(mirrorUID, podUID);
      podToMirror.set(podUID, mirrorUID);
    }
    return { podToMirror, mirrorToPod };
  }

  #podList(): Pod[] {
    this.#pods ??= [...this.#podByUID.values()];
    return this.#pods;
  }

  #updatePodsInternal(pods: readonly Pod[]): void {
    for (const pod of pods) {
      // A static pod and its mirror are paired by full name alone.
      const fullName = getPodFullName(pod);
      const uid = getPodUID(pod);
      if (isMirrorPod(pod)) {
        this.#mirrorPodByUID.set(uid, pod);
        this.#mirrorPodByFullName.set(fullName, pod);
        const staticPod = this.#podByFullName.get(fullName);
        if (staticPod) this.#translationByUID.set(uid, getPodUID(staticPod));
      } else {
        this.#podByUID.set(uid, pod);
        this.#pods = undefined;
        this.#podByFullName.set(fullName, pod);
        const mirror = this.#mirrorPodByFullName.get(fullName);
        if (mirror) this.#translationByUID.set(getPodUID(mirror), uid);
      }
    }
  }
}
