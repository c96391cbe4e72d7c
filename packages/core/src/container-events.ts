import type { RuntimePodStatus } from './runtime.js';

/**
 * What happened to a container, as the runtime reports it (CRI `ContainerEventType`).
 * @public
 */
export type RuntimeContainerEventType =
  | 'ContainerCreated'
  | 'ContainerStarted'
  | 'ContainerStopped'
  | 'ContainerDeleted';

/**
 * One event of the runtime's container event stream (CRI `ContainerEventResponse`).
 * @public
 */
export interface RuntimeContainerEvent {
  /** The container (or sandbox) ID without its runtime type. */
  readonly containerId: string;
  readonly type: RuntimeContainerEventType;
  /** When the runtime made the event (epoch ms). */
  readonly createdAt: number;
  /**
   * The pod the container belongs to, from the event's sandbox status metadata. Undefined when
   * the event had none (its sandbox is already gone; a relist catches up), as upstream skips it.
   */
  readonly pod: { readonly uid: string; readonly name: string; readonly namespace: string } | undefined;
  /**
   * The pod's status at the event, when the source converts the event's statuses itself
   * (upstream `Runtime.GeneratePodStatus`); undefined makes the consumer read the pod's status.
   */
  readonly podStatus?: RuntimePodStatus;
}

/**
 * The runtime does not implement the container event stream (CRI `GetContainerEvents` answered
 * with gRPC status UNIMPLEMENTED, as containerd 1.6 does).
 * @public
 */
export class ContainerEventsUnimplementedError extends Error {
  readonly code = 'ContainerEventsUnimplemented';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ContainerEventsUnimplementedError';
  }
}

/**
 * A runtime that streams container events (CRI `GetContainerEvents`), which the evented PLEG
 * consumes.
 * @public
 */
export interface ContainerEventSource {
  /**
   * The runtime's events from now on, until `signal` aborts (then the iteration ends quietly).
   * The iteration throws when the stream fails, or a
   * {@link ContainerEventsUnimplementedError} when the runtime does not implement it.
   */
  getContainerEvents(signal: AbortSignal): AsyncIterable<RuntimeContainerEvent>;
}
