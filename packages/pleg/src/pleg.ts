/**
 * What happened to a pod (upstream `PodLifeCycleEventType`). The generic PLEG sends
 * ContainerStarted, ContainerDied and ContainerRemoved; `ContainerChanged` is computed but never
 * sent (upstream filters it as unreliable), and `PodSync` is kept for other generators (upstream's
 * evented PLEG sends it when no single event describes a change).
 * @public
 */
export type PodLifecycleEventType =
  | 'ContainerStarted'
  | 'ContainerDied'
  | 'ContainerRemoved'
  | 'PodSync'
  | 'ContainerChanged';

/** One pod lifecycle event (upstream `PodLifecycleEvent`). @public */
export interface PodLifecycleEvent {
  /** The pod's UID. */
  readonly id: string;
  readonly type: PodLifecycleEventType;
  /** The container (or sandbox) ID without its runtime type, for container events. */
  readonly data?: string;
}

/** The result of {@link PodLifecycleEventGenerator.healthy}. @public */
export interface PLEGHealth {
  readonly healthy: boolean;
  /** Why it is unhealthy. */
  readonly error?: PLEGNotHealthyError;
}

/** Why the PLEG is unhealthy: no successful relist yet, or none within the threshold. @public */
export class PLEGNotHealthyError extends Error {
  readonly code = 'PLEGNotHealthy';
  constructor(message: string) {
    super(message);
    this.name = 'PLEGNotHealthyError';
  }
}

/** A listener of {@link PodLifecycleEventGenerator.watch}. @public */
export type PodLifecycleEventListener = (event: PodLifecycleEvent) => void;

/** The pod lifecycle event generator (upstream `PodLifecycleEventGenerator`). @public */
export interface PodLifecycleEventGenerator {
  /** Starts relisting periodically; a no-op when running. */
  start(): void;
  /** Stops relisting and aborts a relist in progress; `start()` may be called again. */
  stop(): void;
  /**
   * Calls `listener` synchronously with every event as it is sent (before it enters the
   * bounded channel, so listeners never lose one). Returns the unsubscribe function.
   */
  watch(listener: PodLifecycleEventListener): () => void;
  /** False before the first successful relist and when the last one is older than the threshold. */
  healthy(): PLEGHealth;
  /** Lists the runtime's pods once, updates the cache, and sends the events. */
  relist(): Promise<void>;
}
