import { isStaticPod, type Pod } from '@kubelet-kit/core';
import type { PodDeletionSafetyProvider, StatusPodManager } from '../status-manager.js';

/**
 * A minimal pod manager for status manager tests: pods by UID, mirror pods paired with static
 * pods by full name.
 *
 * @public
 */
export class FakeStatusPodManager implements StatusPodManager {
  readonly #pods = new Map<string, Pod>();
  readonly #mirrors = new Map<string, Pod>();

  constructor(options: { readonly pods?: readonly Pod[]; readonly mirrorPods?: readonly Pod[] } = {}) {
    for (const pod of options.pods ?? []) this.addPod(pod);
    for (const mirror of options.mirrorPods ?? []) this.addMirrorPod(mirror);
  }

  addPod(pod: Pod): void {
    this.#pods.set(pod.metadata?.uid ?? '', pod);
  }

  removePod(uid: string): void {
    this.#pods.delete(uid);
  }

  addMirrorPod(mirror: Pod): void {
    this.#mirrors.set(fullName(mirror), mirror);
  }

  removeMirrorPod(mirror: Pod): void {
    this.#mirrors.delete(fullName(mirror));
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.#pods.get(uid);
  }

  getMirrorPodByPod(pod: Pod): Pod | undefined {
    return this.#mirrors.get(fullName(pod));
  }

  translatePodUID(uid: string): string {
    for (const [name, mirror] of this.#mirrors) {
      if (mirror.metadata?.uid !== uid) continue;
      for (const pod of this.#pods.values()) if (fullName(pod) === name) return pod.metadata?.uid ?? uid;
    }
    return uid;
  }

  getUIDTranslations(): { podToMirror: Map<string, string>; mirrorToPod: Map<string, string> } {
    const podToMirror = new Map<string, string>();
    const mirrorToPod = new Map<string, string>();
    for (const pod of this.#pods.values()) {
      if (!isStaticPod(pod)) continue;
      const uid = pod.metadata?.uid ?? '';
      const mirrorUid = this.#mirrors.get(fullName(pod))?.metadata?.uid ?? '';
      podToMirror.set(uid, mirrorUid);
      if (mirrorUid) mirrorToPod.set(mirrorUid, uid);
    }
    return { podToMirror, mirrorToPod };
  }
}

function fullName(pod: Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}`;
}

/**
 * A deletion-safety provider whose answer per pod UID the test sets.
 *
 * @public
 */
export class FakePodDeletionSafety implements PodDeletionSafetyProvider {
  readonly #running = new Set<string>();

  /** Says whether the pod's containers may still run. */
  setCouldHaveRunningContainers(uid: string, could: boolean): void {
    if (could) this.#running.add(uid);
    else this.#running.delete(uid);
  }

  podCouldHaveRunningContainers(pod: Pod): boolean {
    return this.#running.has(pod.metadata?.uid ?? '');
  }
}
