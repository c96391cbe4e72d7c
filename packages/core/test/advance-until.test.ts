import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { advanceUntil, FakeClock } from '../src/testing/index.js';

describe('advanceUntil', () => {
  it('moves no time when the condition already holds', async () => {
    const clock = new FakeClock(0);
    await expect(advanceUntil(clock, () => 'now')).resolves.toBe('now');
    expect(clock.now()).toBe(0);
  });

  it('steps the clock until the condition returns a value, and resolves with it', async () => {
    const clock = new FakeClock(0);
    let fired = 0;
    clock.setInterval(() => fired++, 250);
    const value = await advanceUntil(clock, () => fired >= 3 && fired, { step: 100 });
    expect(value).toBe(3);
    expect(clock.now()).toBe(800);
  });

  it('lets async code awakened by a timer react within a step', async () => {
    const clock = new FakeClock(0);
    let done = false;
    void (async () => {
      await clock.sleep(50);
      await clock.sleep(50);
      done = true;
    })();
    await advanceUntil(clock, () => done, { step: 100 });
    expect(clock.now()).toBe(100);
  });

  it('waits for real file I/O between steps', async () => {
    const clock = new FakeClock(0);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'core-advance-'));
    let read: string | undefined;
    clock.setTimeout(() => {
      void fs.writeFile(path.join(dir, 'f'), 'x').then(async () => {
        read = await fs.readFile(path.join(dir, 'f'), 'utf8');
      });
    }, 100);
    await advanceUntil(clock, () => read, { step: 100, limit: 3 });
    expect(read).toBe('x');
    await fs.rm(dir, { recursive: true });
  });

  it('treats a throwing condition as not yet, and throws its last error at the limit', async () => {
    const clock = new FakeClock(0);
    let n = 0;
    await expect(
      advanceUntil(
        clock,
        () => {
          n++;
          expect(clock.now()).toBe(10_000);
          return true;
        },
        { step: 10, limit: 5 },
      ),
    ).rejects.toThrow(/expected 50 to be 10000/);
    // Checked once before the first step and once after each of the five.
    expect(n).toBe(6);
    expect(clock.now()).toBe(50);
  });

  it('says the condition was not reached when it only returned "not yet"', async () => {
    const clock = new FakeClock(0);
    await expect(advanceUntil(clock, () => false, { step: 1, limit: 2 })).rejects.toThrow(
      'condition not reached after 2 steps of 1 ms',
    );
  });

  it('awaits a custom settle after each step, and async conditions', async () => {
    const clock = new FakeClock(0);
    const settled: number[] = [];
    await advanceUntil(clock, async () => clock.now() >= 30, {
      step: 10,
      settle: async () => {
        settled.push(clock.now());
      },
    });
    expect(settled).toEqual([10, 20, 30]);
  });
});
