// The README example, run as a test so it stays true.

import { expect, it } from 'vitest';
import { Backoff, getPodFullName, type Pod, type PodUpdate } from '../src/index.js';
import { advanceUntil, FakeClock } from '../src/testing/index.js';

it('runs the README example', async () => {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: { containers: [{ name: 'app', image: 'nginx' }] },
  };
  const update: PodUpdate = { op: 'ADD', pods: [pod], source: 'file' };
  expect([update.op, getPodFullName(pod)]).toEqual(['ADD', 'web_default']);

  const clock = new FakeClock();
  const backoff = new Backoff({ clock, initialMs: 10_000, maxMs: 300_000 });
  const key = `${getPodFullName(pod)}_app`;
  backoff.next(key, clock.now());
  const exitedAt = clock.now();
  backoff.next(key, exitedAt);
  expect(backoff.get(key)).toBe(20_000);
  expect(backoff.isInBackOffSince(key, exitedAt)).toBe(true);

  await advanceUntil(clock, () => !backoff.isInBackOffSince(key, exitedAt), { step: 1_000 });
  expect(clock.since(exitedAt)).toBe(20_000);
});
