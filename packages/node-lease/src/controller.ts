// The node lease controller: upstream component-helpers `apimachinery/lease/controller.go`, as the
// kubelet sets it up in `pkg/kubelet/kubelet.go` (owner reference: `pkg/kubelet/util/nodelease.go`).

import {
  type Clock,
  jitter,
  type Lease,
  type LeaseApi,
  LeaseApiError,
  type Logger,
  type NodeUidGetter,
  noopLogger,
} from '@kubelet-kit/core';

/** The namespace of node leases (upstream `v1.NamespaceNodeLease`). @public */
export const NamespaceNodeLease = 'kube-node-lease';

/** The kubelet's `--node-lease-duration-seconds` default. @public */
export const DefaultNodeLeaseDurationSeconds = 40;

/** The kubelet renews its lease every quarter of its duration (upstream `nodeLeaseRenewIntervalFraction`). @public */
export const NodeLeaseRenewIntervalFraction = 0.25;

/** Immediate update attempts before waiting for the next renewal (upstream `maxUpdateRetries`). @internal */
export const maxUpdateRetries = 5;

/** The cap of the ensure-lease backoff, ms (upstream `maxBackoff`). @internal */
export const maxBackoffMs = 7_000;

/** The base the ensure-lease backoff doubles from, ms: the first wait is twice this. @internal */
export const initialBackoffMs = 100;

/** The jitter of the renewal period (upstream `wait.JitterUntil(..., 0.04, true)`). @internal */
export const renewJitterFactor = 0.04;

/** The heartbeat client's request timeout cap, ms (the kubelet's default `--node-status-update-frequency`). @internal */
export const maxRequestTimeoutMs = 10_000;

/**
 * Options of {@link newNodeLeaseController}.
 *
 * @public
 */
export interface NodeLeaseControllerOptions {
  readonly api: LeaseApi;
  /** The node's name: the lease's name and its `holderIdentity`. */
  readonly nodeName: string;
  /** `spec.leaseDurationSeconds` (`--node-lease-duration-seconds`); default 40. */
  readonly leaseDurationSeconds?: number;
  /** How often the lease is renewed, ms; default a quarter of the lease duration. */
  readonly renewIntervalMs?: number;
  /**
   * Reads the Node's UID, so the lease names its Node as owner (the API server's garbage
   * collector then deletes the lease with the Node). Without it the lease has no owner.
   */
  readonly nodeUidGetter?: NodeUidGetter;
  /** Called when a renewal fails more than once in a row (upstream `onRepeatedHeartbeatFailure`). */
  readonly onRepeatedHeartbeatFailure?: () => void;
  /** The timeout of each API call, ms; default the smaller of the lease duration and 10 s. */
  readonly requestTimeoutMs?: number;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** A random source in [0, 1), for the renewal jitter; defaults to Math.random. */
  readonly random?: () => number;
}

/**
 * Keeps the node's Lease in `kube-node-lease` renewed (upstream `lease.Controller`).
 *
 * @public
 */
export interface NodeLeaseController {
  /** Starts renewing: one sync at once, then one every renew interval after the last ended. */
  start(): void;
  /** Stops renewing and waits for a sync in flight to end. The lease is left to expire. */
  stop(): Promise<void>;
  /** Ensures the lease exists and renews it once (what each tick does). */
  sync(): Promise<void>;
  /** The lease as last read or written, reused for the next renewal. */
  readonly latestLease: Lease | undefined;
  /** The renewal period, ms. */
  readonly renewIntervalMs: number;
}

/** A MicroTime: RFC 3339 with six fractional digits (the clock has milliseconds). @public */
export function formatMicroTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, -1)}000Z`;
}

function leaseApiCode(err: unknown): string {
  return err instanceof LeaseApiError ? err.code : 'Other';
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

class StoppedError extends Error {}

class Controller implements NodeLeaseController {
  readonly renewIntervalMs: number;
  readonly #api: LeaseApi;
  readonly #nodeName: string;
  readonly #leaseDurationSeconds: number;
  readonly #nodeUidGetter: NodeUidGetter | undefined;
  readonly #onRepeatedHeartbeatFailure: (() => void) | undefined;
  readonly #requestTimeoutMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #random: () => number;
  #latestLease: Lease | undefined;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: NodeLeaseControllerOptions) {
    const duration = options.leaseDurationSeconds ?? DefaultNodeLeaseDurationSeconds;
    if (!Number.isInteger(duration) || duration <= 0) {
      throw new Error(`node lease: leaseDurationSeconds must be a positive integer, got ${duration}`);
    }
    if (!options.nodeName) throw new Error('node lease: nodeName is empty');
    this.#api = options.api;
    this.#nodeName = options.nodeName;
    this.#leaseDurationSeconds = duration;
    this.renewIntervalMs = options.renewIntervalMs ?? duration * 1000 * NodeLeaseRenewIntervalFraction;
    this.#nodeUidGetter = options.nodeUidGetter;
    this.#onRepeatedHeartbeatFailure = options.onRepeatedHeartbeatFailure;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? Math.min(duration * 1000, maxRequestTimeoutMs);
    this.#clock = options.clock;
    this.#logger = (options.logger ?? noopLogger).child({ component: 'node-lease' });
    this.#random = options.random ?? Math.random;
  }

  get latestLease(): Lease | undefined {
    return this.#latestLease;
  }

  start(): void {
    if (this.#loop) return;
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal);
  }

  async stop(): Promise<void> {
    this.#abort?.abort(new StoppedError('node lease controller stopped'));
    await this.#loop;
    this.#loop = undefined;
    this.#abort = undefined;
  }

  sync(): Promise<void> {
    return this.#sync(new AbortController().signal);
  }

  // wait.JitterUntil with sliding = true: the period starts when a sync ends.
  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.#sync(signal);
        await this.#clock.sleep(jitter(this.renewIntervalMs, renewJitterFactor, this.#random), signal);
      } catch (err) {
        if (signal.aborted) return;
        // #sync handles its own errors; this is a bug, not an outage.
        this.#logger.error({ err: errorMessage(err) }, 'node lease sync failed');
      }
    }
  }

  async #sync(signal: AbortSignal): Promise<void> {
    if (this.#latestLease) {
      // The lease is ours alone: update from the copy we last wrote, saving a GET per renewal.
      try {
        await this.#retryUpdateLease(this.#latestLease, signal);
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.#logger.info(
          { err: errorMessage(err) },
          'failed to update the lease using the latest lease, ensuring it exists',
        );
      }
    }
    const ensured = await this.#backoffEnsureLease(signal);
    if (!ensured) return;
    this.#latestLease = ensured.lease;
    // A lease just created needs no renewal.
    if (!ensured.created && ensured.lease) {
      try {
        await this.#retryUpdateLease(ensured.lease, signal);
      } catch (err) {
        if (signal.aborted) return;
        this.#logger.error(
          { err: errorMessage(err), intervalMs: this.renewIntervalMs },
          'failed to update the lease, will retry',
        );
      }
    }
  }

  /** Ensures the lease, waiting 200 ms doubling to 7 s between failures; undefined when stopped. */
  async #backoffEnsureLease(
    signal: AbortSignal,
  ): Promise<{ lease: Lease | undefined; created: boolean } | undefined> {
    let sleep = initialBackoffMs;
    for (;;) {
      try {
        return await this.#ensureLease(signal);
      } catch (err) {
        if (signal.aborted) return undefined;
        sleep = Math.min(2 * sleep, maxBackoffMs);
        this.#logger.error(
          { err: errorMessage(err), intervalMs: sleep },
          'failed to ensure the lease exists, will retry',
        );
        try {
          await this.#clock.sleep(sleep, signal);
        } catch {
          return undefined;
        }
      }
    }
  }

  async #ensureLease(signal: AbortSignal): Promise<{ lease: Lease | undefined; created: boolean }> {
    try {
      return {
        lease: await this.#call((s) => this.#api.get(NamespaceNodeLease, this.#nodeName, s), signal),
        created: false,
      };
    } catch (err) {
      if (leaseApiCode(err) !== 'NotFound') throw err;
    }
    const { lease: toCreate, error } = await this.#newLease(undefined, signal);
    // Upstream creates no lease it could not complete (no owner yet): the next sync tries again.
    if (error) {
      this.#logger.info({ err: errorMessage(error) }, 'not creating the lease yet: cannot set its owner');
      return { lease: undefined, created: false };
    }
    return { lease: await this.#call((s) => this.#api.create(toCreate, s), signal), created: true };
  }

  async #retryUpdateLease(base: Lease, signal: AbortSignal): Promise<void> {
    let current: Lease | undefined = base;
    for (let i = 0; i < maxUpdateRetries; i++) {
      if (signal.aborted) throw signal.reason;
      // An owner that cannot be set now does not hold back the renewal.
      const { lease } = await this.#newLease(current, signal);
      try {
        this.#latestLease = await this.#call((s) => this.#api.update(lease, s), signal);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        this.#logger.error({ err: errorMessage(err) }, 'failed to update the lease');
        if (leaseApiCode(err) === 'Conflict') {
          // Someone else wrote it: start from the newer version.
          const ensured = await this.#backoffEnsureLease(signal);
          if (!ensured) throw err;
          current = ensured.lease;
          continue;
        }
        if (i > 0) this.#onRepeatedHeartbeatFailure?.();
      }
    }
    throw new Error(`failed ${maxUpdateRetries} attempts to update the lease`);
  }

  /** The lease to write: `base` (or a new one) renewed now, with the Node as owner when it has none. */
  async #newLease(base: Lease | undefined, signal: AbortSignal): Promise<{ lease: Lease; error?: unknown }> {
    const lease: Lease = base
      ? structuredClone(base)
      : {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.#nodeName, namespace: NamespaceNodeLease },
          spec: { holderIdentity: this.#nodeName, leaseDurationSeconds: this.#leaseDurationSeconds },
        };
    lease.spec = { ...lease.spec, renewTime: formatMicroTime(this.#clock.now()) };
    if (!this.#nodeUidGetter || (lease.metadata?.ownerReferences?.length ?? 0) > 0) return { lease };
    try {
      const uid = await this.#call((s) => this.#nodeUidGetter!.getNodeUid(this.#nodeName, s), signal);
      lease.metadata = {
        ...lease.metadata,
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.#nodeName, uid }],
      };
      return { lease };
    } catch (error) {
      if (signal.aborted) throw error;
      this.#logger.error(
        { err: errorMessage(error), node: this.#nodeName },
        'failed to get the node to set it as the lease owner',
      );
      return { lease, error };
    }
  }

  /** One API call, bounded by the request timeout and cancelled by `signal`. */
  async #call<T>(fn: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
    signal.throwIfAborted();
    const abort = new AbortController();
    const onAbort = () => abort.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = this.#clock.setTimeout(
      () => abort.abort(new LeaseApiError('Other', `request timed out after ${this.#requestTimeoutMs} ms`)),
      this.#requestTimeoutMs,
    );
    try {
      return await new Promise<T>((resolve, reject) => {
        abort.signal.addEventListener('abort', () => reject(abort.signal.reason), { once: true });
        fn(abort.signal).then(resolve, reject);
      });
    } finally {
      timer.cancel();
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/**
 * Creates the controller that keeps `kube-node-lease/<nodeName>` renewed, the heartbeat the node
 * lifecycle controller watches. Call `start()` once the agent runs, `stop()` when it stops.
 *
 * @public
 */
export function newNodeLeaseController(options: NodeLeaseControllerOptions): NodeLeaseController {
  return new Controller(options);
}
