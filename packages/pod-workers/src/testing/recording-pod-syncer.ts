import type { Pod, RuntimePod, RuntimePodStatus, SyncPodType } from '@kubelet-kit/core';
import type { FakeClock } from '@kubelet-kit/core/testing';
import type { PodStatusFunc, PodSyncContext, PodSyncer, SyncPodResult } from '../types.js';

/** Which syncer method a {@link SyncCall} was. @public */
export type SyncCallKind =
  | 'syncPod'
  | 'syncTerminatingPod'
  | 'syncTerminatingRuntimePod'
  | 'syncTerminatedPod';

/** One recorded call of a {@link RecordingPodSyncer}. @public */
export interface SyncCall {
  readonly kind: SyncCallKind;
  /** The pod's UID (the running pod's ID for syncTerminatingRuntimePod). */
  readonly uid: string;
  readonly updateType?: SyncPodType;
  readonly pod?: Pod;
  readonly mirrorPod?: Pod;
  readonly podStatus?: RuntimePodStatus;
  readonly runningPod?: RuntimePod;
  readonly gracePeriod?: number;
  readonly podStatusFn?: PodStatusFunc;
  readonly signal: AbortSignal;
}

/** What a test's hook makes of a call: resolve, reject, or wait on the signal. @public */
export type SyncHook = (call: SyncCall) => Promise<SyncPodResult | undefined> | SyncPodResult | undefined;

/** Options of {@link RecordingPodSyncer}. @public */
export interface RecordingPodSyncerOptions {
  /** Decides each call's outcome; by default every call succeeds at once and no pod is terminal. */
  readonly hook?: SyncHook;
}

/** A `PodSyncer` that records every call (upstream's test `podSyncer` fakes). @public */
export class RecordingPodSyncer implements PodSyncer {
  readonly calls: SyncCall[] = [];
  hook: SyncHook | undefined;

  constructor(options: RecordingPodSyncerOptions = {}) {
    this.hook = options.hook;
  }

  /** The calls for one UID. */
  callsFor(uid: string): SyncCall[] {
    return this.calls.filter((c) => c.uid === uid);
  }

  /** `kind[:updateType]` of each call for `uid`, for compact assertions. */
  historyOf(uid: string): string[] {
    return this.callsFor(uid).map((c) => (c.updateType ? `${c.kind}:${c.updateType}` : c.kind));
  }

  async syncPod(
    ctx: PodSyncContext,
    updateType: SyncPodType,
    pod: Pod,
    mirrorPod: Pod | undefined,
    podStatus: RuntimePodStatus,
  ): Promise<SyncPodResult> {
    const result = await this.#record({
      kind: 'syncPod',
      uid: pod.metadata?.uid ?? '',
      updateType,
      pod,
      ...(mirrorPod && { mirrorPod }),
      podStatus,
      signal: ctx.signal,
    });
    return result ?? { isTerminal: false };
  }

  async syncTerminatingPod(
    ctx: PodSyncContext,
    pod: Pod,
    podStatus: RuntimePodStatus,
    gracePeriod: number | undefined,
    podStatusFn?: PodStatusFunc,
  ): Promise<void> {
    await this.#record({
      kind: 'syncTerminatingPod',
      uid: pod.metadata?.uid ?? '',
      pod,
      podStatus,
      ...(gracePeriod !== undefined && { gracePeriod }),
      ...(podStatusFn && { podStatusFn }),
      signal: ctx.signal,
    });
  }

  async syncTerminatingRuntimePod(ctx: PodSyncContext, runningPod: RuntimePod): Promise<void> {
    await this.#record({
      kind: 'syncTerminatingRuntimePod',
      uid: runningPod.id,
      runningPod,
      signal: ctx.signal,
    });
  }

  async syncTerminatedPod(ctx: PodSyncContext, pod: Pod, podStatus: RuntimePodStatus): Promise<void> {
    await this.#record({
      kind: 'syncTerminatedPod',
      uid: pod.metadata?.uid ?? '',
      pod,
      podStatus,
      signal: ctx.signal,
    });
  }

  async #record(call: SyncCall): Promise<SyncPodResult | undefined> {
    this.calls.push(call);
    return this.hook ? await this.hook(call) : undefined;
  }
}

/** Something with work in flight that can say whether it is busy. @public */
export interface Drainable {
  isWorking(): boolean;
}

/**
 * Lets the workers run on the fake clock until none has work pending (upstream's
 * `drainAllWorkers`). Time does not move; a worker blocked on a timer stays busy. Workers start
 * one per turn of the event loop, so a burst of N new pods needs about N rounds.
 * @public
 */
export async function drainWorkers(workers: Drainable, clock: FakeClock, maxRounds = 10_000): Promise<void> {
  for (let i = 0; i < maxRounds; i++) {
    await clock.tick(0);
    if (!workers.isWorking()) return;
  }
  throw new Error(`pod workers still busy after ${maxRounds} rounds`);
}
