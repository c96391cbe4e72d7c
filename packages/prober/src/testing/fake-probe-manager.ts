import type { Pod, PodStatus } from '@kubelet-kit/core';
import type { ProbeManager } from '../prober-manager.js';
import { DefaultResultsManager, type ResultsManager } from '../results-manager.js';

/** One call a {@link FakeProbeManager} received. @public */
export type FakeProbeManagerCall =
  | {
      readonly method: 'addPod' | 'removePod' | 'stopLivenessAndStartup' | 'updatePodStatus';
      readonly uid: string;
    }
  | { readonly method: 'cleanupPods'; readonly uids: readonly string[] }
  | { readonly method: 'start' | 'stop' };

/**
 * A probe manager that runs no probes (upstream `prober/testing.FakeManager`), for tests of its
 * callers: it records calls, and its results managers are real, so a test sets a liveness
 * Failure with `fake.livenessManager.set(id, 'Failure', pod)`. `updatePodStatus` marks running
 * containers started, and ready unless their readiness result is Failure.
 * @public
 */
export class FakeProbeManager implements ProbeManager {
  readonly livenessManager: ResultsManager = new DefaultResultsManager();
  readonly readinessManager: ResultsManager = new DefaultResultsManager();
  readonly startupManager: ResultsManager = new DefaultResultsManager();
  readonly calls: FakeProbeManagerCall[] = [];
  readonly #pods = new Map<string, Pod>();

  get workerCount(): number {
    return 0;
  }

  /** The pods added and not removed, by UID. */
  get pods(): ReadonlyMap<string, Pod> {
    return this.#pods;
  }

  addPod(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.#pods.set(uid, pod);
    this.calls.push({ method: 'addPod', uid });
  }

  removePod(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.#pods.delete(uid);
    this.calls.push({ method: 'removePod', uid });
  }

  cleanupPods(desiredPodUids: ReadonlySet<string>): void {
    for (const uid of [...this.#pods.keys()]) if (!desiredPodUids.has(uid)) this.#pods.delete(uid);
    this.calls.push({ method: 'cleanupPods', uids: [...desiredPodUids] });
  }

  stopLivenessAndStartup(pod: Pod): void {
    this.calls.push({ method: 'stopLivenessAndStartup', uid: pod.metadata?.uid ?? '' });
  }

  updatePodStatus(pod: Pod, podStatus: PodStatus): void {
    this.calls.push({ method: 'updatePodStatus', uid: pod.metadata?.uid ?? '' });
    for (const c of [...(podStatus.containerStatuses ?? []), ...(podStatus.initContainerStatuses ?? [])]) {
      const running = c.state?.running !== undefined;
      c.started = running;
      c.ready = running && this.readinessManager.get(c.containerID ?? '') !== 'Failure';
    }
  }

  start(): void {
    this.calls.push({ method: 'start' });
  }

  async stop(): Promise<void> {
    this.calls.push({ method: 'stop' });
  }
}
