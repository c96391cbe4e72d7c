import { describe, expect, it } from 'vitest';
import { FakeClock, InMemoryEventRecorder } from '../src/testing/index.js';

const pod = { kind: 'Pod', namespace: 'ns', name: 'web', uid: 'u1' };

describe('InMemoryEventRecorder', () => {
  it('keeps events in order with the time its clock gives', () => {
    const clock = new FakeClock(1_000);
    const recorder = new InMemoryEventRecorder({ now: () => clock.now() });
    recorder.event(pod, 'Normal', 'Pulled', 'pulled img');
    clock.advance(500);
    recorder.event({ ...pod, fieldPath: 'spec.containers{app}' }, 'Warning', 'BackOff', 'back-off');
    expect(recorder.events).toEqual([
      { object: pod, type: 'Normal', reason: 'Pulled', message: 'pulled img', time: 1_000 },
      {
        object: { ...pod, fieldPath: 'spec.containers{app}' },
        type: 'Warning',
        reason: 'BackOff',
        message: 'back-off',
        time: 1_500,
      },
    ]);
  });

  it('drops the oldest events beyond its limit', () => {
    const recorder = new InMemoryEventRecorder({ limit: 2, now: () => 0 });
    for (const reason of ['a', 'b', 'c']) recorder.event(pod, 'Normal', reason, '');
    expect(recorder.events.map((e) => e.reason)).toEqual(['b', 'c']);
  });
});
