import type { Clock, Timer } from '@kubelet-kit/core';
import { abortReason } from '../clock.js';

function sleepWith(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      timer.cancel();
      reject(abortReason(signal!));
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface FakeTimer {
  readonly id: number;
  due: number;
  readonly period: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** Lets queued promise continuations run, so code awakened by a timer can react before the next one. */
function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A deterministic clock for tests: time moves only when the test says so, and timers fire in
 * due order (ties in creation order).
 * @public
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 0;
  #timers: FakeTimer[] = [];

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  since(time: number): number {
    return this.#now - time;
  }

  setTimeout(callback: () => void, delayMs: number): Timer {
    return this.#add(callback, Math.max(0, delayMs), 0);
  }

  setInterval(callback: () => void, periodMs: number): Timer {
    return this.#add(callback, Math.max(1, periodMs), Math.max(1, periodMs));
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, delayMs, signal);
  }

  /** The number of timers waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  /** When the next timer is due, or undefined when none waits. */
  nextDue(): number | undefined {
    const next = this.#sorted()[0];
    return next?.due;
  }

  /** Sets the time without firing anything (for "the clock jumped" cases); never moves back. */
  setTime(ms: number): void {
    this.#now = Math.max(this.#now, ms);
  }

  /**
   * Moves time forward by `ms`, firing due timers synchronously in order. Use `tick` when
   * the code under test awaits between timers.
   */
  advance(ms: number): void {
    const target = this.#now + Math.max(0, ms);
    for (let timer = this.#nextDueBy(target); timer; timer = this.#nextDueBy(target)) {
      this.#fire(timer);
    }
    this.#now = Math.max(this.#now, target);
  }

  /**
   * Moves time forward by `ms`, firing due timers in order and letting promise continuations
   * run after each one (and before the first), so async code awakened by a timer can schedule
   * its next timer within the same tick.
   */
  async tick(ms = 0): Promise<void> {
    const target = this.#now + Math.max(0, ms);
    await flushMicrotasks();
    for (let timer = this.#nextDueBy(target); timer; timer = this.#nextDueBy(target)) {
      this.#fire(timer);
      await flushMicrotasks();
    }
    this.#now = Math.max(this.#now, target);
    await flushMicrotasks();
  }

  /** Fires timers until none is left or `limitMs` of fake time has passed; for draining. */
  async runAll(limitMs = 3_600_000): Promise<void> {
    const end = this.#now + limitMs;
    await flushMicrotasks();
    for (let due = this.nextDue(); due !== undefined && due <= end; due = this.nextDue()) {
      await this.tick(due - this.#now);
    }
  }

  #add(callback: () => void, delay: number, period: number): Timer {
    const timer: FakeTimer = {
      id: this.#nextId++,
      due: this.#now + delay,
      period,
      callback,
      cancelled: false,
    };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
        this.#timers = this.#timers.filter((t) => t !== timer);
      },
    };
  }

  #sorted(): FakeTimer[] {
    return this.#timers.filter((t) => !t.cancelled).sort((a, b) => a.due - b.due || a.id - b.id);
  }

  #nextDueBy(target: number): FakeTimer | undefined {
    const next = this.#sorted()[0];
    return next && next.due <= target ? next : undefined;
  }

  #fire(timer: FakeTimer): void {
    this.#now = Math.max(this.#now, timer.due);
    if (timer.period > 0) {
      timer.due += timer.period;
    } else {
      timer.cancelled = true;
      this.#timers = this.#timers.filter((t) => t !== timer);
    }
    timer.callback();
  }
}
