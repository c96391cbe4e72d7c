import type { Pod } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { BasicPodWorkers, BasicWorkQueue } from '@kubelet-kit/pod-workers';
import {
  drainWorkers,
  FakePodStatusCache,
  RecordingPodSyncer,
  type SyncHook,
} from '@kubelet-kit/pod-workers/testing';

export const T0 = Date.UTC(2026, 0, 1);
/** Epoch ms `s` seconds after the fake clock's start. */
export const at = (s: number): number => T0 + s * 1000;

export interface Harness {
  clock: FakeClock;
  syncer: RecordingPodSyncer;
  cache: FakePodStatusCache;
  queue: BasicWorkQueue;
  recorder: InMemoryEventRecorder;
  workers: BasicPodWorkers;
  drain(): Promise<void>;
}

export interface HarnessOptions {
  hook?: SyncHook;
  autoRefresh?: boolean;
  maxConcurrentSyncs?: number;
  random?: () => number;
}

export function harness(options: HarnessOptions = {}): Harness {
  const clock = new FakeClock(T0);
  const syncer = new RecordingPodSyncer(options.hook ? { hook: options.hook } : {});
  const cache = new FakePodStatusCache({ clock, autoRefresh: options.autoRefresh ?? true });
  const queue = new BasicWorkQueue({ clock });
  const recorder = new InMemoryEventRecorder({ now: () => clock.now() });
  const workers = new BasicPodWorkers({
    podSyncer: syncer,
    podCache: cache,
    clock,
    workQueue: queue,
    recorder,
    random: options.random ?? (() => 0),
    ...(options.maxConcurrentSyncs !== undefined && { maxConcurrentSyncs: options.maxConcurrentSyncs }),
  });
  return { clock, syncer, cache, queue, recorder, workers, drain: () => drainWorkers(workers, clock) };
}

/** A promise the test resolves by hand. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves never; rejects with the signal's reason once it aborts (a sync honouring cancellation). */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export function withPhase(pod: Pod, phase: string): Pod {
  return { ...pod, status: { ...pod.status, phase } };
}

export function withDeletion(pod: Pod, gracePeriodSeconds?: number): Pod {
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      deletionTimestamp: new Date(T0).toISOString(),
      ...(gracePeriodSeconds !== undefined && { deletionGracePeriodSeconds: gracePeriodSeconds }),
    },
  };
}
