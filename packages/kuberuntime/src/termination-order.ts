import { type Clock, isRestartableInitContainer, type Pod } from '@kubelet-kit/core';

// Termination order of a pod with sidecars (upstream `kuberuntime_termination_order.go`):
// regular containers stop first, then restartable init containers in reverse spec order.

interface Gate {
  readonly done: Promise<void>;
  resolve(): void;
}

function gate(): Gate {
  let resolve!: () => void;
  const done = new Promise<void>((r) => {
    resolve = r;
  });
  return { done, resolve };
}

/** Lets each container of a pod being killed wait for those that must stop before it. */
export class TerminationOrdering {
  readonly #gates = new Map<string, Gate>();
  readonly #prereqs = new Map<string, string[]>();
  readonly #clock: Clock;

  /** `running`: the names of the containers being killed; others count as already stopped. */
  constructor(pod: Pod, running: readonly string[], clock: Clock) {
    this.#clock = clock;
    const isRunning = new Set(running);
    for (const name of running) this.#gates.set(name, gate());
    const mains = (pod.spec?.containers ?? []).map((c) => c.name).filter((n) => isRunning.has(n));
    const sidecars = (pod.spec?.initContainers ?? []).filter(isRestartableInitContainer).map((c) => c.name);
    // Each sidecar waits for the main containers and the sidecar right after it in the spec, as
    // upstream: when that one is not running, nothing later holds this one back.
    sidecars.forEach((name, i) => {
      const next = sidecars[i + 1];
      this.#prereqs.set(name, next !== undefined && isRunning.has(next) ? [...mains, next] : mains);
    });
  }

  /** True when the pod needs ordering at all (it has sidecars). */
  static needed(pod: Pod): boolean {
    return (pod.spec?.initContainers ?? []).some(isRestartableInitContainer);
  }

  /** Waits (at most `graceSeconds`) until the container's predecessors stopped; resolves with the seconds waited. */
  async waitForTurn(name: string, graceSeconds: number, signal?: AbortSignal): Promise<number> {
    const prereqs = (this.#prereqs.get(name) ?? [])
      .map((n) => this.#gates.get(n)?.done)
      .filter((p) => p !== undefined);
    if (prereqs.length === 0) return 0;
    const start = this.#clock.now();
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([
        Promise.all(prereqs),
        this.#clock.sleep(graceSeconds * 1000, controller.signal).catch(() => undefined),
      ]);
    } finally {
      controller.abort();
      signal?.removeEventListener('abort', onAbort);
    }
    return (this.#clock.now() - start) / 1000;
  }

  /** Marks the container stopped, releasing those waiting on it. */
  containerTerminated(name: string): void {
    this.#gates.get(name)?.resolve();
  }
}
