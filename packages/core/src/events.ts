/** The object an event is about (a subset of an ObjectReference). @public */
export interface EventObjectRef {
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly uid?: string;
  /** e.g. `spec.containers{app}`, for events about one container. */
  readonly fieldPath?: string;
}

/** Normal or Warning, as Kubernetes events. @public */
export type EventType = 'Normal' | 'Warning';

/** Where components report Kubernetes-style events (upstream `record.EventRecorder`). @public */
export interface EventRecorder {
  event(object: EventObjectRef, type: EventType, reason: string, message: string): void;
}

/** Drops every event. @public */
export const noopEventRecorder: EventRecorder = { event: () => {} };
