import type { Clock, CoreV1Event, ObjectReference } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import {
  defaultAggregateIntervalInSeconds,
  defaultAggregateMaxEvents,
  defaultSpamBurst,
  EventCorrelator,
  eventAggregatorByReasonFunc,
  eventAggregatorByReasonMessageFunc,
  formatEventTime,
} from '../src/event-correlator.js';

/** Upstream's SimpleIntervalClock: every now() moves time on by `intervalMs`. */
function intervalClock(intervalMs: number): Clock {
  const fake = new FakeClock();
  let t = fake.now();
  return {
    now: () => {
      t += intervalMs;
      return t;
    },
    since: (time) => t - time,
    setTimeout: (cb, ms) => fake.setTimeout(cb, ms),
    setInterval: (cb, ms) => fake.setInterval(cb, ms),
    sleep: (ms, signal) => fake.sleep(ms, signal),
  };
}

function ref(kind: string, name: string, namespace: string): ObjectReference {
  return {
    kind,
    name,
    namespace,
    uid: 'C934D34AFB20242',
    apiVersion: 'version',
    fieldPath: 'spec.containers{mycontainer}',
  };
}

function makeEvent(reason: string, message: string, involvedObject: ObjectReference): CoreV1Event {
  const time = formatEventTime(Date.UTC(2026, 0, 1));
  return {
    metadata: {},
    reason,
    message,
    involvedObject,
    source: { component: 'kubelet', host: 'kublet.node1' },
    count: 1,
    firstTimestamp: time,
    lastTimestamp: time,
    type: 'Normal',
  };
}

const makeEvents = (n: number, e: CoreV1Event) => Array.from({ length: n }, () => ({ ...e }));
const makeUniqueEvents = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    makeEvent(`reason-${i}`, `message-${i}`, ref('Pod', `pod-${i}`, `ns-${i}`)),
  );
const makeSimilarEvents = (n: number, e: CoreV1Event, prefix: string) =>
  makeEvents(n, e).map((ev, i) => ({ ...ev, message: `${prefix}-${i}-${ev.message}` }));
const setCount = (e: CoreV1Event, count: number): CoreV1Event => ({ ...e, count });

/** upstream validateEvent: compares all but times and name suffix; times equal iff count is 1. */
function validateEvent(scenario: string, actual: CoreV1Event, expected: CoreV1Event): void {
  const first = actual.firstTimestamp;
  const last = actual.lastTimestamp;
  expect(first, scenario).toBeTruthy();
  expect(last, scenario).toBeTruthy();
  if ((expected.count ?? 0) > 1) expect(first, `${scenario}: compression shows in the times`).not.toBe(last);
  else expect(first, `${scenario}: one occurrence`).toBe(last);
  expect(actual.metadata?.name ?? '', scenario).toMatch(new RegExp(`^${expected.metadata?.name ?? ''}`));
  const strip = (e: CoreV1Event) => ({
    ...e,
    firstTimestamp: undefined,
    lastTimestamp: undefined,
    metadata: { ...e.metadata, name: undefined, namespace: undefined, resourceVersion: undefined },
  });
  expect(strip(actual), scenario).toEqual(strip(expected));
}

describe('EventCorrelator', () => {
  it('aggregates events that differ only in message (upstream TestEventAggregatorByReasonFunc)', () => {
    const e1 = makeEvent('end-of-world', 'it was fun', ref('Pod', 'pod1', 'other'));
    const e2 = makeEvent('end-of-world', 'it was awful', ref('Pod', 'pod1', 'other'));
    const e3 = makeEvent('nevermind', 'it was a bug', ref('Pod', 'pod1', 'other'));
    const [agg1, local1] = eventAggregatorByReasonFunc(e1);
    const [agg2, local2] = eventAggregatorByReasonFunc(e2);
    const [agg3] = eventAggregatorByReasonFunc(e3);
    expect(agg1).toBe(agg2);
    expect(local1).not.toBe(local2);
    expect(agg1).not.toBe(agg3);
    expect(eventAggregatorByReasonMessageFunc(e1)).toBe('(combined from similar events): it was fun');
  });

  // upstream TestEventCorrelator
  const firstEvent = makeEvent('first', 'i am first', ref('Pod', 'my-pod', 'my-ns'));
  const duplicateEvent = makeEvent('duplicate', 'me again', ref('Pod', 'my-pod', 'my-ns'));
  const uniqueEvent = makeEvent('unique', 'snowflake', ref('Pod', 'my-pod', 'my-ns'));
  const similarEvent = makeEvent('similar', 'similar message', {
    ...ref('Pod', 'my-pod', 'my-ns'),
    fieldPath: 'spec.containers{container1}',
  });
  const aggregateEvent = makeEvent(
    similarEvent.reason!,
    eventAggregatorByReasonMessageFunc(similarEvent),
    similarEvent.involvedObject,
  );
  const similarButDifferentContainerEvent: CoreV1Event = {
    ...similarEvent,
    involvedObject: { ...similarEvent.involvedObject, fieldPath: 'spec.containers{container2}' },
  };
  const scenarios: Record<
    string,
    {
      previousEvents: CoreV1Event[];
      newEvent: CoreV1Event;
      expectedEvent?: CoreV1Event;
      intervalSeconds: number;
      expectedSkip?: boolean;
    }
  > = {
    'create-a-single-event': {
      previousEvents: [],
      newEvent: firstEvent,
      expectedEvent: setCount(firstEvent, 1),
      intervalSeconds: 5,
    },
    'the-same-event-should-just-count': {
      previousEvents: makeEvents(1, duplicateEvent),
      newEvent: duplicateEvent,
      expectedEvent: setCount(duplicateEvent, 2),
      intervalSeconds: 5,
    },
    'the-same-event-should-just-count-even-if-more-than-aggregate': {
      previousEvents: makeEvents(defaultAggregateMaxEvents, duplicateEvent),
      newEvent: duplicateEvent,
      expectedEvent: setCount(duplicateEvent, defaultAggregateMaxEvents + 1),
      intervalSeconds: 30,
    },
    'the-same-event-is-spam-if-happens-too-frequently': {
      previousEvents: makeEvents(defaultSpamBurst + 1, duplicateEvent),
      newEvent: duplicateEvent,
      expectedSkip: true,
      intervalSeconds: 1,
    },
    'create-many-unique-events': {
      previousEvents: makeUniqueEvents(30),
      newEvent: uniqueEvent,
      expectedEvent: setCount(uniqueEvent, 1),
      intervalSeconds: 5,
    },
    'similar-events-should-aggregate-event': {
      previousEvents: makeSimilarEvents(defaultAggregateMaxEvents - 1, similarEvent, similarEvent.message!),
      newEvent: similarEvent,
      expectedEvent: setCount(aggregateEvent, 1),
      intervalSeconds: 5,
    },
    'similar-events-many-times-should-count-the-aggregate': {
      previousEvents: makeSimilarEvents(defaultAggregateMaxEvents, similarEvent, similarEvent.message!),
      newEvent: similarEvent,
      expectedEvent: setCount(aggregateEvent, 2),
      intervalSeconds: 5,
    },
    'events-from-different-containers-do-not-aggregate': {
      previousEvents: makeEvents(1, similarButDifferentContainerEvent),
      newEvent: similarEvent,
      expectedEvent: setCount(similarEvent, 1),
      intervalSeconds: 5,
    },
    'similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate': {
      previousEvents: makeSimilarEvents(defaultAggregateMaxEvents - 1, similarEvent, similarEvent.message!),
      newEvent: similarEvent,
      expectedEvent: setCount(similarEvent, 1),
      intervalSeconds: defaultAggregateIntervalInSeconds,
    },
  };

  for (const [name, input] of Object.entries(scenarios)) {
    it(name, () => {
      const clock = intervalClock(input.intervalSeconds * 1000);
      const correlator = new EventCorrelator({ clock });
      for (const previous of input.previousEvents) {
        const now = formatEventTime(clock.now());
        const result = correlator.eventCorrelate({ ...previous, firstTimestamp: now, lastTimestamp: now });
        if (!result.skip) correlator.updateState(result.event!);
      }
      const now = formatEventTime(clock.now());
      const result = correlator.eventCorrelate({
        ...input.newEvent,
        firstTimestamp: now,
        lastTimestamp: now,
      });
      expect(result.skip).toBe(input.expectedSkip ?? false);
      if (input.expectedSkip) return;
      validateEvent(name, result.event!, input.expectedEvent!);
      // A repeat is written as a patch of exactly count, lastTimestamp and message.
      if ((input.expectedEvent!.count ?? 0) > 1) {
        expect(result.patch).toEqual({
          count: input.expectedEvent!.count,
          lastTimestamp: result.event!.lastTimestamp,
          message: result.event!.message,
        });
      } else {
        expect(result.patch).toBeUndefined();
      }
    });
  }

  // upstream TestEventSpamFilter
  const spamKeyFuncBasedOnObjectsAndReason = (e: CoreV1Event) =>
    [
      e.source?.component,
      e.source?.host,
      e.involvedObject.kind,
      e.involvedObject.namespace,
      e.involvedObject.name,
      e.involvedObject.uid,
      e.involvedObject.apiVersion,
      e.reason,
    ].join('');
  const originalEvent = makeEvent('original', 'i am first', ref('Pod', 'my-pod', 'my-ns'));
  const differentReasonEvent = makeEvent('duplicate', 'me again', ref('Pod', 'my-pod', 'my-ns'));
  const spamEvent = makeEvent('original', 'me again', ref('Pod', 'my-pod', 'my-ns'));
  const spamCases: Record<
    string,
    { newEvent: CoreV1Event; expectedSkip: boolean; spamKeyFunc?: (e: CoreV1Event) => string }
  > = {
    'event should be reported as spam if object reference is the same for default spam filter': {
      newEvent: differentReasonEvent,
      expectedSkip: true,
    },
    'event should not be reported as spam if object reference is the same, but reason is different for custom spam filter':
      {
        newEvent: differentReasonEvent,
        expectedSkip: false,
        spamKeyFunc: spamKeyFuncBasedOnObjectsAndReason,
      },
    'event should be reported as spam if object reference and reason is the same, but message is different for custom spam filter':
      { newEvent: spamEvent, expectedSkip: true, spamKeyFunc: spamKeyFuncBasedOnObjectsAndReason },
  };
  for (const [name, input] of Object.entries(spamCases)) {
    it(name, () => {
      const correlator = new EventCorrelator({
        clock: intervalClock(1000),
        burstSize: 1,
        ...(input.spamKeyFunc ? { spamKeyFunc: input.spamKeyFunc } : {}),
      });
      const first = correlator.eventCorrelate(originalEvent);
      if (!first.skip) correlator.updateState(first.event!);
      const result = correlator.eventCorrelate(input.newEvent);
      expect(result.skip).toBe(input.expectedSkip);
      if (!input.expectedSkip) validateEvent(name, result.event!, setCount(input.newEvent, 1));
    });
  }

  it('refills the spam allowance at one event per 5 minutes', () => {
    const clock = new FakeClock();
    const correlator = new EventCorrelator({ clock });
    const event = (i: number) => makeEvent(`r${i}`, `m${i}`, ref('Pod', 'p', 'ns'));
    for (let i = 0; i < defaultSpamBurst; i++) expect(correlator.eventCorrelate(event(i)).skip).toBe(false);
    expect(correlator.eventCorrelate(event(100)).skip).toBe(true);
    clock.advance(299_000);
    expect(correlator.eventCorrelate(event(101)).skip).toBe(true);
    clock.advance(300_000);
    expect(correlator.eventCorrelate(event(102)).skip).toBe(false);
    expect(correlator.eventCorrelate(event(103)).skip).toBe(true);
  });
});
