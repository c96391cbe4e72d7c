import { describe, expect, it } from 'vitest';
import { Backoff, jitter } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

// Cases after client-go's flowcontrol backoff tests.
describe('Backoff', () => {
  it('doubles from the initial delay up to the cap (slow backoff)', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 120_000 });
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) {
      b.next('id', clock.now());
      seen.push(b.get('id'));
      clock.advance(seen.at(-1)!);
    }
    expect(seen).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 64000, 120000, 120000, 120000]);
  });

  it('reset forgets a key', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 5000 });
    b.next('id', clock.now());
    b.next('id', clock.now());
    expect(b.get('id')).toBe(2000);
    b.reset('id');
    expect(b.get('id')).toBe(0);
    b.next('id', clock.now());
    expect(b.get('id')).toBe(1000);
  });

  it('starts over once the entry has expired (2 x max since the last update)', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 5000 });
    for (let i = 0; i < 4; i++) b.next('id', clock.now());
    expect(b.get('id')).toBe(5000);
    clock.advance(10_001);
    b.next('id', clock.now());
    expect(b.get('id')).toBe(1000);
  });

  it('gc drops only expired keys', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 5000 });
    b.next('old', clock.now());
    clock.advance(8000);
    b.next('fresh', clock.now());
    clock.advance(2001);
    b.gc();
    expect(b.get('old')).toBe(0);
    expect(b.get('fresh')).toBe(1000);
    expect(b.size).toBe(1);
  });

  it('isInBackOffSince compares now - eventTime with the delay', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 10_000, maxMs: 300_000 });
    expect(b.isInBackOffSince('c', clock.now())).toBe(false);
    const finishedAt = clock.now();
    b.next('c', finishedAt);
    clock.advance(9_999);
    expect(b.isInBackOffSince('c', finishedAt)).toBe(true);
    clock.advance(1);
    expect(b.isInBackOffSince('c', finishedAt)).toBe(false);
  });

  it('isInBackOffSinceUpdate compares eventTime - lastUpdate with the delay', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 10_000, maxMs: 300_000 });
    b.next('img', clock.now());
    expect(b.isInBackOffSinceUpdate('img', clock.now() + 5_000)).toBe(true);
    expect(b.isInBackOffSinceUpdate('img', clock.now() + 10_000)).toBe(false);
  });

  it('a custom expiry rule replaces the default (the kubelet crash-loop rule: 600 s)', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({
      clock,
      initialMs: 10_000,
      maxMs: 300_000,
      hasExpired: (eventTime, lastUpdate) => eventTime - lastUpdate > 600_000,
    });
    b.next('c', clock.now());
    b.next('c', clock.now());
    expect(b.get('c')).toBe(20_000);
    clock.advance(600_001);
    b.next('c', clock.now());
    expect(b.get('c')).toBe(10_000);
  });

  // client-go TestBackoffHighWaterMark: less than 2 x max after the last update, the next
  // failure stays at the cap instead of starting over.
  it('stays at the cap when the next failure comes within 2 x max', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 5000 });
    for (let i = 0; i <= 5; i++) {
      clock.advance(1000);
      b.next('id', clock.now());
    }
    clock.advance(6000);
    b.next('id', clock.now());
    expect(b.get('id')).toBe(5000);
  });

  // client-go TestIsInBackOffSinceUpdate: the image-pull pattern (check at now, next() when not
  // in back-off), tick by tick, through the cap and the 2 x max expiry.
  it('isInBackOffSinceUpdate follows the upstream tick table', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 10_000 });
    // [tick (s), in back-off, delay (s) while in back-off]
    const table: Array<[number, boolean, number]> = [
      [0, false, 0],
      [1, false, 1],
      [2, true, 2],
      [3, false, 2],
      [4, true, 4],
      [6, true, 4],
      [7, false, 4],
      [8, true, 8],
      [14, true, 8],
      [15, false, 8],
      [16, true, 10],
      [24, true, 10],
      [25, false, 10],
      [26, true, 10],
      [34, true, 10],
      [35, false, 10],
      [56, false, 0],
      [57, false, 1],
    ];
    for (const [tick, inBackOff, delay] of table) {
      clock.setTime(tick * 1000);
      expect(b.isInBackOffSinceUpdate('img', clock.now()), `tick ${tick}`).toBe(inBackOff);
      if (inBackOff) expect(b.get('img'), `tick ${tick}`).toBe(delay * 1000);
      else b.next('img', clock.now());
    }
  });

  it('adds bounded jitter when asked', () => {
    const clock = new FakeClock(0);
    const b = new Backoff({ clock, initialMs: 1000, maxMs: 100_000, maxJitterFactor: 0.5, random: () => 1 });
    b.next('id', clock.now());
    expect(b.get('id')).toBe(1500);
    b.next('id', clock.now());
    expect(b.get('id')).toBe(2 * 1500 + 0.5 * 1500);
    expect(jitter(1000, 0.5, () => 0.5)).toBe(1250);
  });
});
