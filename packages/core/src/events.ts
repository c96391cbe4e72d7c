/** The object an event is about (a subset of an ObjectReference). */
export interface EventObjectRef {
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly uid?: string;
  /** e.g. `spec.containers{app}`, for events about one container. */
  readonly fieldPath?: string;
}

/** Normal or Warning, as Kubernetes events. */
export type EventType = 'Normal' | 'Warning';

/** One recorded event. */
export interface RecordedEvent {
  readonly object: EventObjectRef;
  readonly type: EventType;
  /** Upstream's reason strings: `FailedValidation`, `Pulled`, `BackOff`, `Killing`, … */
  readonly reason: string;
  readonly message: string;
  /** Epoch ms. */
  readonly time: number;
}

/** Where components report Kubernetes-style events (upstream `record.EventRecorder`). */
export interface EventRecorder {
  event(object: EventObjectRef, type: EventType, reason: string, message: string): void;
}

/** Drops every event. */
export const noopEventRecorder: EventRecorder = { event: () => {} };

/** Keeps events in memory (bounded), for tests and for agents that show recent events. */
export class InMemoryEventRecorder implements EventRecorder {
  readonly events: RecordedEvent[] = [];
  readonly #limit: number;
  readonly #now: () => number;

  constructor(options: { limit?: number; now?: () => number } = {}) {
    this.#limit = options.limit ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  event(object: EventObjectRef, type: EventType, reason: string, message: string): void {
    this.events.push({ object, type, reason, message, time: this.#now() });
    if (this.events.length > this.#limit) this.events.splice(0, this.events.length - this.#limit);
  }
}
