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
  /** The item's own `createdAt` (ns): a pod's items go newest first; its newest sandbox dates it. */
  readonly createdAtNs: number;
  readonly container: RuntimeContainer;
  readonly isSandbox: boolean;
  /** The generation of the ready/running-only listing, and of the full one, that last showed it. */
  seenRunning: number;
  seenAll: number;
}

/** One pod of a listing: the items that show it, and the RuntimePod made of them. */
interface PodItems {
  readonly uid: string;
  readonly sandboxes: Converted[];
  readonly containers: Converted[];
  /** Undefined while its items changed since it was made. */
  pod: RuntimePod | undefined;
}

/** What one kind of listing (all, or ready/running only) showed last. */
class ListingState {
  generation = 0;
  /** The pods by UID, in the order they were first listed. */
  readonly pods = new Map<string, PodItems>();
  /** The items of the last listing, to find the ones the next one drops. */
  items: Converted[] = [];
  /** The last result, while no pod changed. */
  result: RuntimePod[] | undefined;
}

/**
 * Groups a listing of sandboxes and containers into pods (upstream `GetPods`), reusing what it
 * made of the last listing. The CRI client returns the same item object for an unchanged sandbox
 * or container, so only items it has not seen in the last listing, and the ones that listing had
 * and this one lacks, touch their pods; a pod none of whose items changed is the same RuntimePod
 * object. A relist of many steady pods then costs a lookup per item and nothing per pod (it used
 * to sort and regroup every item, the largest term of a relist at 10,000 pods).
 *
 * Within a pod, sandboxes and containers are newest first, as upstream's callers take the first
 * sandbox as the latest. Pods are in the order they were first listed.
 */
export class PodListing {
  /** What each listed item became, by the item object (dropped with it). */
  #converted = new WeakMap<object, Converted>();
  /** By `all`: [ready/running only, all]. */
  #states: [ListingState, ListingState] = [new ListingState(), new ListingState()];
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
      this.#states = [new ListingState(), new ListingState()];
    }
    const state = this.#states[all ? 1 : 0];
    const previous = state.generation;
    const generation = ++state.generation;
    const items: Converted[] = [];
    /** Pods whose items changed. */
    const dirty = new Set<PodItems>();
    let kept = 0;
    const take = (c: Converted) => {
      const seen = all ? c.seenAll : c.seenRunning;
      if (seen === generation) return; // listed twice: once is enough
      if (all) c.seenAll = generation;
      else c.seenRunning = generation;
      items.push(c);
      if (seen === previous && previous !== 0) {
        kept++;
        return;
      }
      if (!c.uid) return;
      let p = state.pods.get(c.uid);
      if (!p) {
        p = { uid: c.uid, sandboxes: [], containers: [], pod: undefined };
        state.pods.set(c.uid, p);
      }
      (c.isSandbox ? p.sandboxes : p.containers).push(c);
      dirty.add(p);
    };
    for (const s of sandboxes) take(this.#sandbox(s));
    for (const c of containers) take(this.#container(c));
    if (kept < state.items.length) {
      // Some items of the last listing are gone: take them out of their pods.
      for (const c of state.items) {
        if ((all ? c.seenAll : c.seenRunning) === generation || !c.uid) continue;
        const p = state.pods.get(c.uid);
        if (!p) continue;
        const list = c.isSandbox ? p.sandboxes : p.containers;
        const at = list.indexOf(c);
        if (at >= 0) list.splice(at, 1);
        dirty.add(p);
      }
    }
    state.items = items;
    if (dirty.size === 0 && state.result) return [...state.result];
    for (const p of dirty) {
      if (p.sandboxes.length === 0 && p.containers.length === 0) state.pods.delete(p.uid);
      else p.pod = makePod(p);
    }
    const result: RuntimePod[] = [];
    for (const p of state.pods.values()) result.push(p.pod as RuntimePod);
    state.result = result;
    return [...result];
  }

  #sandbox(s: PodSandbox): Converted {
    const known = this.#converted.get(s);
    if (known) return known;
    const info = getContainerInfoFromLabels(s.labels);
    const converted: Converted = {
      uid: info.podUid || s.metadata?.uid || '',
      podName: s.metadata?.name ?? info.podName,
      podNamespace: s.metadata?.namespace ?? info.podNamespace,
      createdAtNs: s.createdAt,
      container: {
        id: { type: this.#runtimeName, id: s.id },
        name: s.metadata?.name ?? '',
        image: '',
        imageId: '',
        hash: '',
        state: s.state === PodSandboxState.SANDBOX_READY ? 'running' : 'exited',
      },
      isSandbox: true,
      seenRunning: 0,
      seenAll: 0,
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
      createdAtNs: c.createdAt,
      container: {
        id: { type: this.#runtimeName, id: c.id },
        name: info.containerName,
        image: c.image?.userSpecifiedImage || c.image?.image || '',
        imageId: c.imageId || c.imageRef,
        hash: getContainerInfoFromAnnotations(c.annotations).hash,
        state: toContainerState(c.state),
      },
      isSandbox: false,
      seenRunning: 0,
      seenAll: 0,
    };
    this.#converted.set(c, converted);
    return converted;
  }
}

const newestFirst = (a: Converted, b: Converted) => b.createdAtNs - a.createdAtNs;

/** The pod of its items: named after its newest sandbox, or its newest container without one. */
function makePod(p: PodItems): RuntimePod {
  p.sandboxes.sort(newestFirst);
  p.containers.sort(newestFirst);
  const named = p.sandboxes[0] ?? (p.containers[0] as Converted);
  return {
    id: p.uid,
    name: named.podName,
    namespace: named.podNamespace,
    // Sandboxes are newest first; a pod of containers only was never created.
    createdAt: p.sandboxes[0] ? nsToMs(p.sandboxes[0].createdAtNs) : 0,
    containers: p.containers.map((c) => c.container),
    sandboxes: p.sandboxes.map((c) => c.container),
  };
}
