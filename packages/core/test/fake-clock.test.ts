import { describe, expect, it } from 'vitest';
import { FakeClock } from '../src/testing/index.js';

describe('FakeClock', () => {
  it('moves only when told and fires timers in due order, ties in creation order', () => {
    const clock = new FakeClock(1000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b@20'), 20);
    clock.setTimeout(() => fired.push('a@10'), 10);
    clock.setTimeout(() => fired.push('c@20'), 20);
    expect(clock.now()).toBe(1000);
    clock.advance(15);
    expect(fired).toEqual(['a@10']);
    expect(clock.now()).toBe(1015);
    clock.advance(5);
    expect(fired).toEqual(['a@10', 'b@20', 'c@20']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('sets now to the due time while a timer fires', () => {
    const clock = new FakeClock(0);
    let seen = -1;
    clock.setTimeout(() => {
      seen = clock.now();
    }, 30);
    clock.advance(100);
    expect(seen).toBe(30);
    expect(clock.now()).toBe(100);
  });

  it('cancelled timers never fire', () => {
    const clock = new FakeClock(0);
    let fired = false;
    const timer = clock.setTimeout(() => {
      fired = true;
    }, 10);
    timer.cancel();
    clock.advance(50);
    expect(fired).toBe(false);
  });

  it('intervals repeat until cancelled', () => {
    const clock = new FakeClock(0);
    const at: number[] = [];
    const timer = clock.setInterval(() => at.push(clock.now()), 10);
    clock.advance(35);
    expect(at).toEqual([10, 20, 30]);
    timer.cancel();
    clock.advance(100);
    expect(at).toEqual([10, 20, 30]);
  });

  it('tick lets async code schedule its next timer within the same advance', async () => {
    const clock = new FakeClock(0);
    const wakes: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(10);
        wakes.push(clock.now());
      }
    })();
    await clock.tick(30);
    await loop;
    expect(wakes).toEqual([10, 20, 30]);
  });

  it('tick never moves time back when code advances the clock while it runs', async () => {
    const clock = new FakeClock(0);
    clock.setTimeout(() => {
      void Promise.resolve().then(() => clock.advance(500));
    }, 10);
    await clock.tick(100);
    expect(clock.now()).toBe(510);
  });

  it('sleep rejects with the abort reason', async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(1000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
    expect(clock.pendingTimers).toBe(0);
  });

  it('setTime never moves backwards and nextDue reports the earliest timer', () => {
    const clock = new FakeClock(500);
    clock.setTime(100);
    expect(clock.now()).toBe(500);
    clock.setTimeout(() => {}, 50);
    clock.setTimeout(() => {}, 5);
    expect(clock.nextDue()).toBe(505);
  });

  it('runAll drains timers that schedule more timers, within its limit', async () => {
    const clock = new FakeClock(0);
    let count = 0;
    const again = () => {
      count++;
      if (count < 5) clock.setTimeout(again, 100);
    };
    clock.setTimeout(again, 100);
    await clock.runAll();
    expect(count).toBe(5);
    expect(clock.now()).toBe(500);
  });
});
