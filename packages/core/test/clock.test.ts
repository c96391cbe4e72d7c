import { describe, expect, it } from 'vitest';
import { RealClock } from '../src/index.js';

describe('RealClock', () => {
  it('sleeps for real and measures elapsed time', async () => {
    const clock = new RealClock();
    const start = clock.now();
    await clock.sleep(15);
    expect(clock.since(start)).toBeGreaterThanOrEqual(10);
  });

  it('sleep rejects when already aborted', async () => {
    const clock = new RealClock();
    await expect(clock.sleep(10, AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });
});
