import type { Pod, PodStatusCache, RuntimePodStatus } from '@kubelet-kit/core';
import { emptyPodStatus } from '../pod-workers.js';
import type { PodSyncer, PodWorkerSync, PodWorkers, UpdatePodOptions } from '../types.js';

/** Options of {@link FakePodWorkers}. @public */
export interface FakePodWorkersOptions {
  /** Called for every non-kill update, as the real workers would call it. */
  readonly syncPod?: PodSyncer['syncPod'];
  /** Where the statuses handed to `syncPod` come from. */
  readonly podCache?: PodStatusCache;
}

/**
 * A stand-in for {@link PodWorkers} in the kubelet's tests (upstream `fakePodWorkers`): a kill
 * is only recorded, any other update calls `syncPod` at once with the cached status, and each
 * query answers from a set the test fills.
 * @public
 */
export class FakePodWorkers implements PodWorkers {
  readonly #syncPod: PodSyncer['syncPod'] | undefined;
  readonly #podCache: PodStatusCache | undefined;
  readonly #inFlight = new Set<Promise<void>>();

  /** Every update received, in order. */
  readonly updates: UpdatePodOptions[] = [];
  /** UIDs that received a kill. */
  readonly triggeredDeletion: string[] = [];
  /** UIDs whose syncPod reported a terminal pod. */
  readonly triggeredTerminal: string[] = [];
  /** Errors syncPod threw. */
  readonly errors: unknown[] = [];

  readonly running = new Set<string>();
  readonly terminating = new Set<string>();
  readonly terminated = new Set<string>();
  readonly terminationRequested = new Set<string>();
  readonly finished = new Set<string>();
  readonly removeRuntime = new Set<string>();
  readonly removeContent = new Set<string>();
  readonly terminatingStaticPods = new Set<string>();
  /** What `syncKnownPods` returns. */
  knownPods = new Map<string, PodWorkerSync>();

  constructor(options: FakePodWorkersOptions = {}) {
    this.#syncPod = options.syncPod;
    this.#podCache = options.podCache;
  }

  updatePod(options: UpdatePodOptions): void {
    this.updates.push(options);
    const uid = options.pod?.metadata?.uid ?? options.runningPod?.id;
    if (uid === undefined) return;
    if (options.updateType === 'kill') {
      this.triggeredDeletion.push(uid);
      return;
    }
    const syncPod = this.#syncPod;
    const pod = options.pod;
    if (!syncPod || !pod) return;
    const status: RuntimePodStatus = this.#podCache?.get(uid).status ?? emptyPodStatus(uid, pod);
    const call = syncPod(
      { signal: new AbortController().signal },
      options.updateType,
      pod,
      options.mirrorPod,
      status,
    )
      .then(
        (result) => {
          if (result.isTerminal) this.triggeredTerminal.push(uid);
        },
        (err: unknown) => {
          this.errors.push(err);
        },
      )
      .finally(() => this.#inFlight.delete(call));
    this.#inFlight.add(call);
  }

  /** Resolves once every syncPod call made so far has settled. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  syncKnownPods(_desiredPods: readonly Pod[]): Map<string, PodWorkerSync> {
    return new Map(this.knownPods);
  }

  isPodKnownTerminated(uid: string): boolean {
    return this.terminated.has(uid);
  }
  couldHaveRunningContainers(uid: string): boolean {
    return this.running.has(uid);
  }
  shouldPodBeFinished(uid: string): boolean {
    return this.finished.has(uid);
  }
  isPodTerminationRequested(uid: string): boolean {
    return this.terminationRequested.has(uid);
  }
  shouldPodContainersBeTerminating(uid: string): boolean {
    return this.terminating.has(uid);
  }
  shouldPodRuntimeBeRemoved(uid: string): boolean {
    return this.removeRuntime.has(uid);
  }
  shouldPodContentBeRemoved(uid: string): boolean {
    return this.removeContent.has(uid);
  }
  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean {
    return this.terminatingStaticPods.has(podFullName);
  }
}
