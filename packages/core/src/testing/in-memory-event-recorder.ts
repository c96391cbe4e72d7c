import type { EventObjectRef, EventRecorder, EventType } from '@kubelet-kit/core';

/** One recorded event. @public */
export interface RecordedEvent {
  readonly object: EventObjectRef;
  readonly type: EventType;
  /** Upstream's reason strings: `FailedValidation`, `Pulled`, `BackOff`, `Killing`, … */
  readonly reason: string;
  readonly message: string;
  /** Epoch ms. */
  readonly time: number;
}

/** Keeps events in memory (bounded), for tests that assert on what was recorded. @public */
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
