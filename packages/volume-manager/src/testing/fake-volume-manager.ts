import type { MountedVolume, Pod } from '@kubelet-kit/core';
import type { VolumeManager, WaitOptions } from '../volume-manager.js';

/**
 * A volume manager that mounts nothing: every volume of a pod counts as mounted at
 * `<root>/<uid>/<name>` once waited for, unless its name is in `failing`.
 *
 * @public
 */
export class FakeVolumeManager implements VolumeManager {
  readonly #root: string;
  readonly #mounted = new Map<string, Map<string, MountedVolume>>();
  /** Volume names whose wait fails. */
  readonly failing = new Set<string>();
  /** Calls, in order: `wait <uid>`, `unmount <uid>`, `reprocess <uid>`. */
  readonly calls: string[] = [];

  constructor(options: { rootDirectory?: string } = {}) {
    this.#root = options.rootDirectory ?? '/fake-volumes';
  }

  start(): void {}

  async stop(): Promise<void> {}

  async waitForAttachAndMount(pod: Pod, _options?: WaitOptions): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.calls.push(`wait ${uid}`);
    const bad = (pod.spec?.volumes ?? []).filter((v) => this.failing.has(v.name)).map((v) => v.name);
    if (bad.length > 0)
      throw new Error(`unmounted volumes=[${bad.join(' ')}]: timed out waiting for the condition`);
    const volumes = new Map<string, MountedVolume>();
    for (const v of pod.spec?.volumes ?? [])
      volumes.set(v.name, { hostPath: `${this.#root}/${uid}/${v.name}`, readOnly: false });
    this.#mounted.set(uid, volumes);
  }

  async waitForUnmount(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.calls.push(`unmount ${uid}`);
    this.#mounted.delete(uid);
  }

  reprocessPod(uid: string): void {
    this.calls.push(`reprocess ${uid}`);
  }

  getMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume> {
    return this.#mounted.get(podUid) ?? new Map();
  }

  getPossiblyMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume> {
    return this.getMountedVolumesForPod(podUid);
  }

  reconcilerStatesHasBeenSynced(): boolean {
    return true;
  }

  getVolumeErrors(): ReadonlyMap<string, string> {
    return new Map();
  }
}
