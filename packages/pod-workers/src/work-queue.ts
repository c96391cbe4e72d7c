import type { Clock } from '@kubelet-kit/core';

/**
 * Records when each pod is next due for a sync (upstream `pkg/kubelet/util/queue.WorkQueue`).
 * Pod workers never resync themselves: they enqueue, and the kubelet's sync tick asks for the
 * due UIDs and sends them a `sync` update.
 * @public
 */
export interface WorkQueue {
  /** Items whose due time has passed; they are removed from the queue. */
  getWork(): string[];
  /** Makes `uid` due after `delayMs`, replacing any earlier due time for it. */
  enqueue(uid: string, delayMs: number): void;
}

/** Options of {@link BasicWorkQueue}. @public */
export interface BasicWorkQueueOptions {
  readonly clock: Clock;
}

/** One queued due time; superseded once the map holds another entry for its UID. */
interface QueueEntry {
  readonly uid: string;
  readonly at: number;
}

/**
 * A {@link WorkQueue} over a min-heap of due times read against the injected clock. `getWork`
 * takes only the due entries (upstream's map is scanned whole on every 1 s sync tick, which at
 * 100,000 pods is a pass over every pod per second); a later enqueue supersedes the entry in
 * place of moving it, and superseded entries are dropped as they surface or when they outnumber
 * the live ones. Due items come out oldest due time first.
 * @public
 */
export class BasicWorkQueue implements WorkQueue {
  readonly #clock: Clock;
  /** The live entry of each queued UID. */
  readonly #queue = new Map<string, QueueEntry>();
  /** Live and superseded entries, a binary min-heap on `at`. */
  #heap: QueueEntry[] = [];

  constructor(options: BasicWorkQueueOptions) {
    this.#clock = options.clock;
  }

  getWork(): string[] {
    const now = this.#clock.now();
    const due: string[] = [];
    const heap = this.#heap;
    while (heap.length > 0 && (heap[0] as QueueEntry).at <= now) {
      const top = this.#pop();
      if (this.#queue.get(top.uid) !== top) continue;
      this.#queue.delete(top.uid);
      due.push(top.uid);
    }
    return due;
  }

  enqueue(uid: string, delayMs: number): void {
    const entry: QueueEntry = { uid, at: this.#clock.now() + Math.max(0, delayMs) };
    this.#queue.set(uid, entry);
    this.#push(entry);
    // Superseded entries are kept until they surface: bound them by the live ones.
    if (this.#heap.length > 1024 && this.#heap.length > 2 * this.#queue.size) this.#rebuild();
  }

  /** When `uid` is due (epoch ms), or undefined when it is not queued. For tests and debugging. */
  dueTime(uid: string): number | undefined {
    return this.#queue.get(uid)?.at;
  }

  /** The number of queued items. */
  get size(): number {
    return this.#queue.size;
  }

  /** Entries held, superseded ones included (for tests of the bound). @internal */
  get heapSize(): number {
    return this.#heap.length;
  }

  #push(entry: QueueEntry): void {
    const heap = this.#heap;
    let i = heap.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as QueueEntry;
      if (p.at <= entry.at) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): QueueEntry {
    const heap = this.#heap;
    const top = heap[0] as QueueEntry;
    const last = heap.pop() as QueueEntry;
    if (heap.length > 0) {
      let i = 0;
      const n = heap.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && (heap[r] as QueueEntry).at < (heap[l] as QueueEntry).at ? r : l;
        if ((heap[c] as QueueEntry).at >= last.at) break;
        heap[i] = heap[c] as QueueEntry;
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }

  #rebuild(): void {
    const live = [...this.#queue.values()];
    this.#heap = [];
    for (const e of live) this.#push(e);
  }
}
