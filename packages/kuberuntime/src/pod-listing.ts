import type { RuntimeContainer, RuntimePod } from '@kubelet-kit/core';
import { type Container, type PodSandbox, PodSandboxState } from '@kubelet-kit/cri';
import { toContainerState } from './container.js';
import { nsToMs } from './helpers.js';
import { getContainerInfoFromAnnotations, getContainerInfoFromLabels } from './labels.js';

/** A listed sandbox or container as getPods files it: its pod and its RuntimeContainer. */
interface Converted {
  readonly uid: string;
  readonly podName: string;
  readonly podNamespace: string;
  /** Epoch ms (sandboxes only). */
  readonly createdAtMs: number;
  readonly container: RuntimeContainer;
}

interface Building {
  id: string;
  name: string;
  namespace: string;
  createdAt: number;
  containers: RuntimeContainer[];
  sandboxes: RuntimeContainer[];
}

/**
 * Groups a listing of sandboxes and containers into pods (upstream `GetPods`), reusing what it
 * made of the last listing: the CRI client returns the same item object for an unchanged
 * sandbox or container, so its RuntimeContainer is the one made before, and a pod none of whose
 * items changed is the same RuntimePod object. A relist of 100,000 steady pods then makes
 * almost nothing (it used to rebuild every pod, a cost that grew with the pod count).
 */
export class PodListing {
  /** What each listed item became, by the item object (dropped with it). */
  #converted = new WeakMap<object, Converted>();
  /** The pods of the last listing, by `all` and UID. */
  readonly #last: [Map<string, RuntimePod>, Map<string, RuntimePod>] = [new Map(), new Map()];
  #runtimeName = '';

  build(
    all: boolean,
    sandboxes: readonly PodSandbox[],
    containers: readonly Container[],
    runtimeName: string,
  ): RuntimePod[] {
    if (runtimeName !== this.#runtimeName) {
      // Container IDs carry the runtime's name.
      this.#runtimeName = runtimeName;
      this.#converted = new WeakMap();
    }
    const pods = new Map<string, Building>();
    const podOf = (uid: string, name: string, namespace: string): Building => {
      let p = pods.get(uid);
      if (!p) {
        p = { id: uid, name, namespace, createdAt: 0, containers: [], sandboxes: [] };
        pods.set(uid, p);
      }
      return p;
    };
    // Newest first within a pod, as upstream's callers take the first sandbox as the latest.
    for (const s of [...sandboxes].sort((a, b) => b.createdAt - a.createdAt)) {
      const c = this.#sandbox(s);
      if (!c.uid) continue;
      const p = podOf(c.uid, c.podName, c.podNamespace);
      p.createdAt = Math.max(p.createdAt, c.createdAtMs);
      p.sandboxes.push(c.container);
    }
    for (const item of [...containers].sort((a, b) => b.createdAt - a.createdAt)) {
      const c = this.#container(item);
      if (!c.uid) continue;
      podOf(c.uid, c.podName, c.podNamespace).containers.push(c.container);
    }
    const last = this.#last[all ? 1 : 0];
    const next = new Map<string, RuntimePod>();
    for (const [uid, p] of pods) {
      const old = last.get(uid);
      next.set(uid, old && samePod(old, p) ? old : p);
    }
    this.#last[all ? 1 : 0] = next;
    return [...next.values()];
  }

  #sandbox(s: PodSandbox): Converted {
    const known = this.#converted.get(s);
    if (known) return known;
    const info = getContainerInfoFromLabels(s.labels);
    const converted: Converted = {
      uid: info.podUid || s.metadata?.uid || '',
      podName: s.metadata?.name ?? info.podName,
      podNamespace: s.metadata?.namespace ?? info.podNamespace,
      createdAtMs: nsToMs(s.createdAt),
      container: {
        id: { type: this.#runtimeName, id: s.id },
        name: s.metadata?.name ?? '',
        image: '',
        imageId: '',
        hash: '',
        state: s.state === PodSandboxState.SANDBOX_READY ? 'running' : 'exited',
      },
    };
    this.#converted.set(s, converted);
    return converted;
  }

  #container(c: Container): Converted {
    const known = this.#converted.get(c);
    if (known) return known;
    const info = getContainerInfoFromLabels(c.labels);
    const converted: Converted = {
      uid: info.podUid,
      podName: info.podName,
      podNamespace: info.podNamespace,
      createdAtMs: 0,
      container: {
        id: { type: this.#runtimeName, id: c.id },
        name: info.containerName,
        image: c.image?.userSpecifiedImage || c.image?.image || '',
        imageId: c.imageId || c.imageRef,
        hash: getContainerInfoFromAnnotations(c.annotations).hash,
        state: toContainerState(c.state),
      },
    };
    this.#converted.set(c, converted);
    return converted;
  }
}

function samePod(a: RuntimePod, b: Building): boolean {
  return (
    a.name === b.name &&
    a.namespace === b.namespace &&
    a.createdAt === b.createdAt &&
    sameItems(a.containers, b.containers) &&
    sameItems(a.sandboxes, b.sandboxes)
  );
}

function sameItems(a: readonly RuntimeContainer[], b: readonly RuntimeContainer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
