import type { ContainerStatus, Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { podRows, podStatusReason } from '../src/pod-table.js';

const now = Date.parse('2026-01-10T12:00:00Z');
const ago = (ms: number) => new Date(now - ms).toISOString();
const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

function pod(
  status: Pod['status'],
  extra: { init?: Array<{ name: string; always?: boolean }>; deleted?: boolean; createdAgo?: number } = {},
): Pod {
  return {
    metadata: {
      name: 'p',
      namespace: 'default',
      creationTimestamp: ago(extra.createdAgo ?? 10 * S),
      ...(extra.deleted ? { deletionTimestamp: ago(1 * S) } : {}),
    },
    spec: {
      containers: (status?.containerStatuses ?? [{ name: 'c' }]).map((c) => ({ name: c.name })),
      ...(extra.init
        ? {
            initContainers: extra.init.map((c) => ({
              name: c.name,
              ...(c.always ? { restartPolicy: 'Always' } : {}),
            })),
          }
        : {}),
    },
    status,
  };
}

const running = (name: string, ready = true, restartCount = 0): ContainerStatus => ({
  name,
  image: 'i',
  imageID: '',
  ready,
  restartCount,
  started: true,
  state: { running: { startedAt: ago(5 * S) } },
});

function row(p: Pod) {
  const [, ready, status, restarts, age] = podRows([p], now)[0]!;
  return { ready, status, restarts, age };
}

describe('podRows AGE (apimachinery HumanDuration)', () => {
  // HumanDuration's table: hours and minutes below 8h, days and hours below 8d, years after 2y.
  it.each([
    [59 * S, '59s'],
    [119 * S, '119s'],
    [2 * M, '2m'],
    [9 * M + 59 * S, '9m59s'],
    [179 * M, '179m'],
    [3 * H, '3h'],
    [3 * H + 30 * M, '3h30m'],
    [7 * H + 59 * M, '7h59m'],
    [8 * H + 30 * M, '8h'],
    [47 * H, '47h'],
    [2 * D, '2d'],
    [2 * D + 5 * H, '2d5h'],
    [7 * D + 23 * H, '7d23h'],
    [8 * D + 5 * H, '8d'],
    [729 * D, '729d'],
    [730 * D, '2y'],
    [731 * D, '2y1d'],
    [365 * 8 * D, '8y'],
    [-1500, '0s'],
    [-2 * S, '<invalid>'],
  ])('%i ms → %s', (ms, want) => {
    const p = pod({ phase: 'Running', containerStatuses: [running('c')] }, { createdAgo: ms });
    expect(row(p).age).toBe(want);
  });

  it('counts from creation, not from the start time (printPod uses CreationTimestamp)', () => {
    const p = pod(
      { phase: 'Running', startTime: ago(5 * S), containerStatuses: [running('c')] },
      { createdAgo: 3 * M },
    );
    expect(row(p).age).toBe('3m');
  });

  it('uses the start time of a pod without a creation timestamp (a static pod from a file)', () => {
    const p: Pod = { metadata: { name: 'p' }, status: { phase: 'Running', startTime: ago(5 * S) } };
    expect(row(p).age).toBe('5s');
    expect(row({ metadata: { name: 'p' } }).age).toBe('<unknown>');
  });
});

describe('podRows RESTARTS and READY (printPod)', () => {
  it('shows when the last restart was', () => {
    const c = {
      ...running('c', true, 3),
      lastState: { terminated: { exitCode: 1, finishedAt: ago(4 * M) } },
    };
    expect(row(pod({ phase: 'Running', containerStatuses: [c] })).restarts).toBe('3 (4m ago)');
  });

  it('leaves out restarts of init containers once the pod is initialized', () => {
    const init: ContainerStatus = {
      name: 'init',
      image: 'i',
      imageID: '',
      ready: false,
      restartCount: 2,
      state: { terminated: { exitCode: 0, reason: 'Completed' } },
    };
    const p = pod(
      { phase: 'Running', initContainerStatuses: [init], containerStatuses: [running('c')] },
      { init: [{ name: 'init' }] },
    );
    expect(row(p)).toMatchObject({ restarts: '0', status: 'Running', ready: '1/1' });
  });

  it('counts a sidecar in READY only once started, and its restarts', () => {
    const sidecar = { ...running('side', true, 1) };
    const p = pod(
      { phase: 'Running', initContainerStatuses: [sidecar], containerStatuses: [running('c', false)] },
      { init: [{ name: 'side', always: true }] },
    );
    expect(row(p)).toMatchObject({ ready: '1/2', restarts: '1' });
  });

  it('does not count a ready container that is not running', () => {
    const c: ContainerStatus = {
      name: 'c',
      image: 'i',
      imageID: '',
      ready: true,
      restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } },
    };
    expect(row(pod({ phase: 'Pending', containerStatuses: [c] })).ready).toBe('0/1');
  });
});

describe('podStatusReason (printPod)', () => {
  const terminated = (
    name: string,
    t: { exitCode: number; reason?: string; signal?: number },
  ): ContainerStatus => ({
    name,
    image: 'i',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: t },
  });

  it('names the signal of a container killed without a reason', () => {
    expect(
      podStatusReason(
        pod({ phase: 'Failed', containerStatuses: [terminated('c', { exitCode: 137, signal: 9 })] }),
      ),
    ).toBe('Signal:9');
    const p = pod(
      { phase: 'Pending', initContainerStatuses: [terminated('init', { exitCode: 143, signal: 15 })] },
      { init: [{ name: 'init' }] },
    );
    expect(podStatusReason(p)).toBe('Init:Signal:15');
  });

  it('shows Init:i/n while an init container runs', () => {
    const p = pod(
      {
        phase: 'Pending',
        initContainerStatuses: [terminated('a', { exitCode: 0, reason: 'Completed' }), running('b', false)],
      },
      { init: [{ name: 'a' }, { name: 'b' }] },
    );
    expect(podStatusReason(p)).toBe('Init:1/2');
  });

  it('keeps a finished pod being deleted as it ended, not Terminating', () => {
    const p = pod(
      { phase: 'Succeeded', containerStatuses: [terminated('c', { exitCode: 0, reason: 'Completed' })] },
      { deleted: true },
    );
    expect(podStatusReason(p)).toBe('Completed');
    const live = pod({ phase: 'Running', containerStatuses: [running('c')] }, { deleted: true });
    expect(podStatusReason(live)).toBe('Terminating');
  });

  it('shows Unknown for a deleted pod of a lost node', () => {
    const p = pod(
      { phase: 'Running', reason: 'NodeLost', containerStatuses: [running('c')] },
      { deleted: true },
    );
    expect(podStatusReason(p)).toBe('Unknown');
  });

  it('shows NotReady, not Running, for a completed container beside a running one when the pod is not Ready', () => {
    const statuses = [terminated('a', { exitCode: 0, reason: 'Completed' }), running('b')];
    expect(podStatusReason(pod({ phase: 'Running', containerStatuses: statuses }))).toBe('NotReady');
    const readyPod = pod({
      phase: 'Running',
      containerStatuses: statuses,
      conditions: [{ type: 'Ready', status: 'True' }],
    });
    expect(podStatusReason(readyPod)).toBe('Running');
  });

  it('shows the regular containers of an initialized pod whose sidecar is restarting', () => {
    const side: ContainerStatus = {
      name: 'side',
      image: 'i',
      imageID: '',
      ready: false,
      restartCount: 2,
      started: false,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
    };
    const p = pod(
      {
        phase: 'Running',
        conditions: [{ type: 'Initialized', status: 'True' }],
        initContainerStatuses: [side],
        containerStatuses: [
          { ...running('c'), state: { waiting: { reason: 'CrashLoopBackOff' } }, ready: false },
        ],
      },
      { init: [{ name: 'side', always: true }] },
    );
    expect(row(p)).toMatchObject({ status: 'CrashLoopBackOff', restarts: '2' });
  });

  it('shows the init container waiting reason (Init:CrashLoopBackOff)', () => {
    const init: ContainerStatus = {
      name: 'init',
      image: 'i',
      imageID: '',
      ready: false,
      restartCount: 3,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
    };
    const p = pod({ phase: 'Pending', initContainerStatuses: [init] }, { init: [{ name: 'init' }] });
    expect(row(p)).toMatchObject({ status: 'Init:CrashLoopBackOff', restarts: '3' });
  });
});
