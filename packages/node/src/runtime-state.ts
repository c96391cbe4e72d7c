import type { Clock, Logger, Runtime, RuntimeCondition, Timer } from '@kubelet-kit/core';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { GenericPLEG, RuntimePodStatusCache } from '@kubelet-kit/pleg';
import { instrumentCriClient } from './instrumented.js';
import type { KubeletMetrics } from './metrics.js';

/** The runtime counts as down once Status has not answered ready for this long (upstream, 30 s). */
const maxWaitForContainerRuntimeMs = 30_000;
/** How often the runtime's Status is asked (upstream's updateRuntimeUp runs every 5 s). */
const runtimeStatusPeriodMs = 5000;

/**
 * The CRI clients of the runtime at `endpoint`, their calls counted and timed in `metrics`.
 *
 * @internal
 */
export function createCriServices(options: {
  readonly endpoint: string;
  /** Largest CRI message, bytes (default the client's, 16 MiB). */
  readonly maxMessageBytes?: number | undefined;
  readonly metrics: KubeletMetrics;
}): {
  readonly runtimeService: RuntimeServiceClient;
  readonly imageService: ImageServiceClient;
  close(): void;
} {
  const limits = options.maxMessageBytes ? { maxMessageBytes: options.maxMessageBytes } : {};
  const runtimeService = instrumentCriClient(
    new RuntimeServiceClient({ endpoint: options.endpoint, ...limits }),
    options.metrics,
  );
  const imageService = instrumentCriClient(
    new ImageServiceClient({ endpoint: options.endpoint, ...limits }),
    options.metrics,
  );
  return {
    runtimeService,
    imageService,
    close() {
      runtimeService.close();
      imageService.close();
    },
  };
}

/**
 * The pod status cache and the PLEG that fills it from `runtime`, its relists timed in `metrics`.
 *
 * @internal
 */
export function createPleg(options: {
  readonly runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: KubeletMetrics;
}): { readonly pleg: GenericPLEG; readonly podCache: RuntimePodStatusCache } {
  const podCache = new RuntimePodStatusCache();
  const pleg = new GenericPLEG({
    runtime: options.runtime,
    cache: podCache,
    clock: options.clock,
    logger: options.logger.child({ component: 'pleg' }),
    // The sync loop takes events through watch(); an unread channel would fill and drop.
    channelCapacity: 0,
    onRelist: (r) => options.metrics.plegRelistDuration.observe(r.durationMs / 1000),
  });
  return { pleg, podCache };
}

/**
 * Upstream `runtimeState` with `updateRuntimeUp`: asks the runtime's Status every 5 s and keeps
 * when it last answered ready, why it is not ready, and whether its network is.
 *
 * @internal
 */
export class RuntimeState {
  readonly #runtime: { status(): Promise<readonly RuntimeCondition[]> };
  readonly #clock: Clock;
  readonly #logger: Logger;
  #networkReady = true;
  #networkError: string | undefined;
  #lastRuntimeSync = 0;
  #runtimeNotReady: string | undefined;
  #timer: Timer | undefined;

  constructor(options: {
    readonly runtime: { status(): Promise<readonly RuntimeCondition[]> };
    readonly clock: Clock;
    readonly logger: Logger;
  }) {
    this.#runtime = options.runtime;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  /** Whether the runtime's network is ready (true until it says otherwise). */
  networkReady(): boolean {
    return this.#networkReady;
  }

  /** Upstream `runtimeErrors`: why the runtime is down or not ready, or undefined. */
  runtimeErrors(): string | undefined {
    const errs: string[] = [];
    if (this.#clock.since(this.#lastRuntimeSync) > maxWaitForContainerRuntimeMs)
      errs.push('container runtime is down');
    if (this.#runtimeNotReady) errs.push(this.#runtimeNotReady);
    if (errs.length === 0) return undefined;
    return errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`;
  }

  /**
   * Upstream `runtimeState.runtimeErrors` as a list, for the Ready condition: no Status answer
   * yet, no ready answer for 30 s, or the runtime's own not-ready reason.
   */
  runtimeErrorList(): string[] {
    const errs: string[] = [];
    if (this.#lastRuntimeSync === 0) errs.push('container runtime status check may not have completed yet');
    else if (this.#clock.since(this.#lastRuntimeSync) > maxWaitForContainerRuntimeMs)
      errs.push('container runtime is down');
    if (this.#runtimeNotReady) errs.push(this.#runtimeNotReady);
    return errs;
  }

  /** Upstream `runtimeState.networkErrors`: why the runtime's network is not ready, if it is not. */
  networkErrors(): string[] {
    return this.#networkError ? [this.#networkError] : [];
  }

  /** Asks the runtime's Status once; a failed call is logged and changes nothing. */
  async check(): Promise<void> {
    try {
      const conditions = await this.#runtime.status();
      const network = conditions.find((c) => c.type === 'NetworkReady');
      this.#networkReady = network?.status ?? true;
      // Upstream's text: the condition as the CRI says it.
      this.#networkError =
        network && !network.status
          ? `container runtime network not ready: NetworkReady=false reason:${network.reason} message:${network.message}`
          : undefined;
      const ready = conditions.find((c) => c.type === 'RuntimeReady');
      if (ready && !ready.status) {
        this.#runtimeNotReady = `container runtime not ready: RuntimeReady=false reason:${ready.reason} message:${ready.message}`;
        return;
      }
      this.#runtimeNotReady = undefined;
      this.#lastRuntimeSync = this.#clock.now();
    } catch (err) {
      this.#logger.warn({ err: String(err) }, 'runtime status check failed');
    }
  }

  /** Checks now, then every 5 s until `stop`. */
  async start(): Promise<void> {
    await this.check();
    this.#timer = this.#clock.setInterval(() => void this.check(), runtimeStatusPeriodMs);
  }

  stop(): void {
    this.#timer?.cancel();
  }
}
