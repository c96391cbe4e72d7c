import type { Pod, Volume } from '@kubelet-kit/core';
import type { VolumePlugin } from './volume-plugin.js';

/** A volume some pod wants mounted (upstream `cache.VolumeToMount`). */
export interface VolumeToMount {
  readonly podUid: string;
  /** The name in `pod.spec.volumes` (upstream's OuterVolumeSpecName). */
  readonly volumeName: string;
  readonly volume: Volume;
  readonly plugin: VolumePlugin;
  readonly podVolumeDir: string;
}

/**
 * The names of the volumes some container of the pod mounts or maps as a device: init, regular
 * and ephemeral containers (upstream `util.GetPodVolumeNames`). Only these are set up, and only
 * these are waited for; a declared volume no container uses is skipped.
 */
export function podVolumeNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  const spec = pod.spec;
  for (const c of [
    ...(spec?.initContainers ?? []),
    ...(spec?.containers ?? []),
    ...(spec?.ephemeralContainers ?? []),
  ]) {
    for (const m of c.volumeMounts ?? []) names.add(m.name);
    for (const d of c.volumeDevices ?? []) names.add(d.name);
  }
  return names;
}

interface DesiredPod {
  pod: Pod;
  volumes: Map<string, VolumeToMount>;
  /** Volumes no plugin supports, with why. */
  failed: Map<string, string>;
}

/** The volumes the desired pods want (upstream `cache.DesiredStateOfWorld`), keyed by pod UID. */
export class DesiredStateOfWorld {
  readonly #pods = new Map<string, DesiredPod>();

  /** Adds or refreshes a pod; returns whether it was new. */
  addPod(
    pod: Pod,
    findPlugin: (v: Volume) => VolumePlugin | undefined,
    dirOf: (p: VolumePlugin, v: Volume) => string,
  ): boolean {
    const uid = pod.metadata?.uid ?? '';
    const existing = this.#pods.get(uid);
    const volumes = new Map<string, VolumeToMount>();
    const failed = new Map<string, string>();
    const used = podVolumeNames(pod);
    for (const volume of pod.spec?.volumes ?? []) {
      // As upstream's populator: a volume no container uses is never set up.
      if (!used.has(volume.name)) continue;
      const plugin = findPlugin(volume);
      if (!plugin) {
        failed.set(volume.name, 'no volume plugin matched');
        continue;
      }
      volumes.set(volume.name, {
        podUid: uid,
        volumeName: volume.name,
        volume,
        plugin,
        podVolumeDir: dirOf(plugin, volume),
      });
    }
    this.#pods.set(uid, { pod, volumes, failed });
    return existing === undefined;
  }

  deletePod(uid: string): void {
    this.#pods.delete(uid);
  }

  hasPod(uid: string): boolean {
    return this.#pods.has(uid);
  }

  getPod(uid: string): Pod | undefined {
    return this.#pods.get(uid)?.pod;
  }

  podUids(): string[] {
    return [...this.#pods.keys()];
  }

  getVolume(uid: string, name: string): VolumeToMount | undefined {
    return this.#pods.get(uid)?.volumes.get(name);
  }

  /** Volumes that could not be processed (no plugin), by name. */
  failedVolumes(uid: string): ReadonlyMap<string, string> {
    return this.#pods.get(uid)?.failed ?? new Map();
  }

  /**
   * Calls `fn` for every desired volume. The reconciler's pass, ten times a second: Map's
   * forEach allocates nothing per volume, where a list or a generator's results did.
   */
  forEachVolumeToMount(fn: (volume: VolumeToMount) => void): void {
    // fn itself, not a closure per pod: Map passes (value, key, map) and fn reads the value.
    for (const p of this.#pods.values()) p.volumes.forEach(fn);
  }

  /** Calls `fn` for every desired volume of one pod. */
  forEachVolumeToMountOfPod(uid: string, fn: (volume: VolumeToMount) => void): void {
    this.#pods.get(uid)?.volumes.forEach(fn);
  }
}

/** A volume mounted for a pod (upstream `cache.MountedVolume`). */
export interface ActualVolume {
  readonly podUid: string;
  readonly volumeName: string;
  readonly pluginName: string;
  readonly podVolumeDir: string;
  readonly hostPath: string;
  readonly readOnly: boolean;
  /** Rebuilt from disk after a restart rather than mounted by this process. */
  readonly reconstructed: boolean;
  /** The reprocess generation the content was last projected for. */
  readonly mountedGeneration: number;
}

/** The volumes mounted now (upstream `cache.ActualStateOfWorld`), by pod UID then volume name. */
export class ActualStateOfWorld {
  readonly #pods = new Map<string, Map<string, ActualVolume>>();
  /** Bumped by each reprocess of a pod; a volume below it needs its content projected again. */
  readonly #generation = new Map<string, number>();

  markMounted(volume: ActualVolume): void {
    let volumes = this.#pods.get(volume.podUid);
    if (!volumes) {
      volumes = new Map();
      this.#pods.set(volume.podUid, volumes);
    }
    volumes.set(volume.volumeName, volume);
  }

  markUnmounted(uid: string, name: string): void {
    const volumes = this.#pods.get(uid);
    volumes?.delete(name);
    if (volumes?.size === 0) this.#pods.delete(uid);
  }

  /** Asks for every volume of the pod to be projected again (upstream MarkRemountRequired). */
  markRemountRequired(uid: string): void {
    this.#generation.set(uid, this.generation(uid) + 1);
  }

  generation(uid: string): number {
    return this.#generation.get(uid) ?? 0;
  }

  remountRequired(volume: ActualVolume): boolean {
    return volume.mountedGeneration < this.generation(volume.podUid);
  }

  forgetPod(uid: string): void {
    if (!this.#pods.has(uid)) this.#generation.delete(uid);
  }

  get(uid: string, name: string): ActualVolume | undefined {
    return this.#pods.get(uid)?.get(name);
  }

  volumesOfPod(uid: string): ActualVolume[] {
    return [...(this.#pods.get(uid)?.values() ?? [])];
  }

  /** Calls `fn` for every mounted volume, as {@link DesiredStateOfWorld.forEachVolumeToMount}. */
  forEach(fn: (volume: ActualVolume) => void): void {
    for (const m of this.#pods.values()) m.forEach(fn);
  }

  /** Calls `fn` for every mounted volume of one pod. */
  forEachOfPod(uid: string, fn: (volume: ActualVolume) => void): void {
    this.#pods.get(uid)?.forEach(fn);
  }
}
