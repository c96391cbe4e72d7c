import type { RuntimePodStatus } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import type { PlegView } from '../src/deps.js';
import { PodInspections } from '../src/pod-inspections.js';

type Read = readonly { uid: string; status?: RuntimePodStatus }[];

function setup(pleg: Partial<PlegView> = {}) {
  const clock = new FakeClock();
  const reads: string[][] = [];
  const known: Array<Array<[string, boolean]>> = [];
  const released: string[] = [];
  const relists: number[] = [];
  const abort = new AbortController();
  const logger = new InMemoryLogger();
  const view: PlegView = {
    start() {},
    stop() {},
    watch: () => () => {},
    healthy: () => ({ healthy: true }),
    inspectPods: async (pods: Read) => {
      reads.push(pods.map((p) => p.uid));
      known.push(pods.map((p) => [p.uid, p.status !== undefined]));
    },
    releasePod: (uid) => released.push(uid),
    relist: async () => {
      relists.push(clock.now());
    },
    ...pleg,
  };
  const inspections = new PodInspections({ pleg: view, clock, logger, signal: abort.signal });
  return { clock, reads, known, released, relists, abort, logger, inspections };
}

const status = (uid: string): RuntimePodStatus => ({
  id: uid,
  name: uid,
  namespace: 'default',
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
  timestamp: 0,
});
const target = (uid: string) => ({ uid, name: uid, namespace: 'default' });

describe('PodInspections', () => {
  it('reads the pods requested within 5 ms in one round, oldest request first', () => {
    const { clock, reads, inspections } = setup();
    inspections.request(target('a'));
    clock.advance(2);
    inspections.request(target('b'));
    inspections.request(target('a'));
    clock.advance(2);
    expect(reads).toEqual([]);
    // a's newer request moved it behind b, and is due 5 ms after it was made.
    clock.advance(1);
    expect(reads).toEqual([]);
    clock.advance(2);
    expect(reads).toEqual([['b', 'a']]);
  });

  it('reads a pod that is due and leaves one requested later for the next round', () => {
    const { clock, reads, inspections } = setup();
    inspections.request(target('a'));
    clock.advance(3);
    inspections.request(target('b'));
    clock.advance(2);
    expect(reads).toEqual([['a']]);
    clock.advance(3);
    expect(reads).toEqual([['a'], ['b']]);
  });

  it("passes on the status the runtime's sync reported, unless an earlier change still needs a read", () => {
    const { clock, known, inspections } = setup();
    inspections.request(target('a'), status('a'));
    inspections.request(target('b'));
    inspections.request(target('b'), status('b'));
    clock.advance(5);
    expect(known).toEqual([
      [
        ['a', true],
        ['b', false],
      ],
    ]);
  });

  it('takes the target from a pod', () => {
    const { clock, reads, inspections } = setup();
    inspections.requestPod({ metadata: { uid: 'u1', name: 'web', namespace: 'default' } });
    clock.advance(5);
    expect(reads).toEqual([['u1']]);
  });

  it('relists when the PLEG cannot read single pods', () => {
    const { clock, relists, inspections } = setup({ inspectPods: undefined });
    inspections.request(target('a'));
    inspections.request(target('b'));
    clock.advance(5);
    expect(relists).toHaveLength(1);
  });

  it('once stopped, reads nothing and releases the pods it is asked about', () => {
    const { clock, reads, released, abort, inspections } = setup();
    inspections.request(target('a'));
    abort.abort();
    inspections.stop();
    inspections.request(target('b'));
    clock.advance(100);
    expect(reads).toEqual([]);
    expect(released).toEqual(['b']);
  });

  it('logs a failed read', async () => {
    const { clock, logger, inspections } = setup({
      inspectPods: async () => {
        throw new Error('runtime gone');
      },
    });
    inspections.request(target('a'));
    await clock.tick(5);
    expect(logger.records.map((r) => [r.level, r.message, r.fields.err])).toEqual([
      ['warn', 'requested pod inspection failed', 'Error: runtime gone'],
    ]);
  });
});
