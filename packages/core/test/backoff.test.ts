import { describe, expect, it } from 'vitest';
import { Backoff, FakeClock, jitter } from '../src/index.js';

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
