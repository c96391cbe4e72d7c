import { type Clock, CodedError, type EventRecorder, type Pod, podEventReference } from '@kubelet-kit/core';
import type { PodStatusFunc, PodWorkers } from './types.js';

/** The kill did not complete within the grace period × 1.5 (at least 10 s). @public */
export class ExceededGracePeriodError extends CodedError<'ExceededGracePeriod'> {
  constructor(message = 'timeout waiting to kill pod') {
    super('ExceededGracePeriodError', 'ExceededGracePeriod', message);
  }
}

/** Arguments of a {@link KillPodFunc} call. @public */
export interface KillPodRequest {
  readonly pod: Pod;
  /** The kubelet evicts the pod. */
  readonly isEvicted: boolean;
  /** Seconds; shortens the grace period in force. */
  readonly gracePeriodOverride?: number;
  /** Sets the status the killed pod reports. */
  readonly statusFn?: PodStatusFunc;
}

/** Kills a pod and resolves once it is terminated (upstream `eviction.KillPodFunc`). @public */
export type KillPodFunc = (request: KillPodRequest) => Promise<void>;

/** Options of {@link killPodNow}. @public */
export interface KillPodNowOptions {
  readonly podWorkers: PodWorkers;
  readonly recorder: EventRecorder;
  readonly clock: Clock;
}

/** The blocking minimum of the kill timeout: time for kubelet→runtime traffic of a SIGKILL. */
const minKillTimeoutSeconds = 10;

/**
 * A {@link KillPodFunc} for other managers (eviction, preemption) to inject: it sends a `kill`
 * update and waits for its completion, or fails after max(grace × 1.5, 10 s) with the event
 * `ExceededGracePeriod` (upstream `killPodNow`).
 *
 * @public
 */
export function killPodNow(options: KillPodNowOptions): KillPodFunc {
  const { podWorkers, recorder, clock } = options;
  return (request) => {
    const { pod } = request;
    const gracePeriod = request.gracePeriodOverride ?? pod.spec?.terminationGracePeriodSeconds ?? 0;
    const timeoutSeconds = Math.max(gracePeriod + Math.trunc(gracePeriod / 2), minKillTimeoutSeconds);
    return new Promise<void>((resolve, reject) => {
      let done = false;
      const timer = clock.setTimeout(() => {
        if (done) return;
        done = true;
        recorder.event(
          podEventReference(pod),
          'Warning',
          'ExceededGracePeriod',
          'Container runtime did not kill the pod within specified grace period.',
        );
        reject(new ExceededGracePeriodError());
      }, timeoutSeconds * 1000);
      podWorkers.updatePod({
        pod,
        updateType: 'kill',
        killPodOptions: {
          onCompleted: () => {
            if (done) return;
            done = true;
            timer.cancel();
            resolve();
          },
          evict: request.isEvicted,
          ...(request.statusFn && { podStatusFunc: request.statusFn }),
          ...(request.gracePeriodOverride !== undefined && {
            podTerminationGracePeriodSecondsOverride: request.gracePeriodOverride,
          }),
        },
      });
    });
  };
}
