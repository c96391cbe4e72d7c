import type { Pod, PodOperation, PodSourceName, PodUpdate } from '@kubelet-kit/core';
import type { PodSource, PodSourceSink } from '../source.js';

/**
 * A pod source driven by the test: `set(pods)` sends a SET, `send(op, pods)` any update. Updates
 * sent before `start` are delivered at start, in order.
 *
 * @public
 */
export class FakePodSource implements PodSource {
  readonly name: PodSourceName;
  /** Every update sent, in order. */
  readonly sent: PodUpdate[] = [];
  #sink: PodSourceSink | undefined;
  #pending: PodUpdate[] = [];
  #started = false;
  #stopped = false;

  constructor(name: PodSourceName = 'fake') {
    this.name = name;
  }

  get started(): boolean {
    return this.#started;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  async start(sink: PodSourceSink): Promise<void> {
    this.#sink = sink;
    this.#started = true;
    const pending = this.#pending;
    this.#pending = [];
    for (const update of pending) await sink(update);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
  }

  /** Sends a SET of `pods` (the source's whole state). */
  set(pods: Pod[]): Promise<void> {
    return this.send('SET', pods);
  }

  /** Sends one update; resolves when the sink accepted it (after any back-pressure). */
  async send(op: PodOperation, pods: Pod[]): Promise<void> {
    const update: PodUpdate = { op, pods, source: this.name };
    this.sent.push(update);
    if (this.#stopped) return;
    if (!this.#sink) {
      this.#pending.push(update);
      return;
    }
    await this.#sink(update);
  }
}
