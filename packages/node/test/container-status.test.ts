import type { Pod, RuntimeContainerStatus, RuntimePodStatus } from '@kubelet-kit/core';
import { shouldContainerBeRestarted } from '@kubelet-kit/kuberuntime';
import { describe, expect, it } from 'vitest';
import { convertToAPIContainerStatuses, ReasonCache } from '../src/index.js';

const pod = (restartPolicy: 'Always' | 'OnFailure' | 'Never' = 'Always', deleting = false): Pod => ({
  metadata: {
    name: 'p',
    namespace: 'ns',
    uid: 'uid1',
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  spec: { restartPolicy, containers: [{ name: 'app', image: 'busybox' }] },
});

let seq = 0;
const ctr = (
  state: RuntimeContainerStatus['state'],
  over: Partial<RuntimeContainerStatus> = {},
): RuntimeContainerStatus => ({
  id: { type: 'containerd', id: `c${++seq}` },
  name: 'app',
  state,
  createdAt: 1000 * seq,
  startedAt: state === 'created' ? 0 : 1000 * seq + 10,
  finishedAt: state === 'exited' ? 1000 * seq + 500 : 0,
  exitCode: 0,
  image: 'busybox',
  imageId: 'sha256:abc',
  hash: 'h',
  restartCount: 0,
  reason: '',
  message: '',
  ...over,
});

const status = (...containers: RuntimeContainerStatus[]): RuntimePodStatus => ({
  id: 'uid1',
  name: 'p',
  namespace: 'ns',
  ips: [],
  containerStatuses: containers,
  sandboxStatuses: [],
  timestamp: 0,
});

const convert = (p: Pod, s: RuntimePodStatus, reasonCache = new ReasonCache()) =>
  convertToAPIContainerStatuses({
    pod: p,
    podStatus: s,
    previousStatuses: undefined,
    containers: p.spec!.containers,
    hasInitContainers: false,
    isInitContainer: false,
    reasonCache,
  });

describe('shouldContainerBeRestarted (upstream rules in order)', () => {
  it.each([
    ['deleting pod', pod('Always', true), status(ctr('exited')), false],
    ['no status', pod(), status(), true],
    ['running', pod(), status(ctr('running')), false],
    ['created', pod('Never'), status(ctr('created')), true],
    ['unknown', pod('Never'), status(ctr('unknown')), true],
    ['exited under Never', pod('Never'), status(ctr('exited', { exitCode: 1 })), false],
    ['exit 0 under OnFailure', pod('OnFailure'), status(ctr('exited')), false],
    ['exit 1 under OnFailure', pod('OnFailure'), status(ctr('exited', { exitCode: 1 })), true],
    ['exit 0 under Always', pod('Always'), status(ctr('exited')), true],
  ])('%s', (_name, p, s, want) => {
    expect(shouldContainerBeRestarted(p.spec!.containers[0]!, p, s)).toBe(want);
  });
});

describe('convertToAPIContainerStatuses', () => {
  it('a container without runtime status waits in ContainerCreating', () => {
    const [s] = convert(pod(), status());
    expect(s?.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(s?.ready).toBe(false);
  });

  it('the newest run is the state and the one before it the last state', () => {
    const old = ctr('exited', { exitCode: 2, reason: 'Error', restartCount: 0 });
    const cur = ctr('running', { restartCount: 1 });
    const [s] = convert(pod(), status(old, cur));
    expect(s?.state?.running?.startedAt).toBeDefined();
    expect(s?.lastState?.terminated?.exitCode).toBe(2);
    expect(s?.lastState?.terminated?.reason).toBe('Error');
    expect(s?.restartCount).toBe(1);
    expect(s?.containerID).toBe(`containerd://${cur.id.id}`);
  });

  it('a crash-looping container shows the backoff reason and keeps its exit as the last state', () => {
    const cache = new ReasonCache();
    cache.update('uid1', {
      syncResults: [
        {
          action: 'StartContainer',
          target: 'app',
          error: 'CrashLoopBackOff',
          message: 'back-off 10s restarting failed container',
        },
      ],
    });
    const [s] = convert(pod(), status(ctr('exited', { exitCode: 1, restartCount: 3 })), cache);
    expect(s?.state?.waiting).toEqual({
      reason: 'CrashLoopBackOff',
      message: 'back-off 10s restarting failed container',
    });
    expect(s?.lastState?.terminated?.exitCode).toBe(1);
    expect(s?.restartCount).toBe(3);
  });

  it('a failure reason is not applied to a container that will not restart (Never)', () => {
    const cache = new ReasonCache();
    cache.update('uid1', {
      syncResults: [{ action: 'StartContainer', target: 'app', error: 'CrashLoopBackOff', message: '' }],
    });
    const [s] = convert(pod('Never'), status(ctr('exited', { exitCode: 1 })), cache);
    expect(s?.state?.terminated?.exitCode).toBe(1);
  });

  it('a successful start clears the reason', () => {
    const cache = new ReasonCache();
    cache.update('uid1', {
      syncResults: [{ action: 'StartContainer', target: 'app', error: 'ErrImagePull', message: 'x' }],
    });
    cache.update('uid1', { syncResults: [{ action: 'StartContainer', target: 'app', message: '' }] });
    expect(cache.get('uid1', 'app')).toBeUndefined();
  });

  it('a container that was running and vanished is reported as terminated 137 in its last state', () => {
    const p = pod();
    const statuses = convertToAPIContainerStatuses({
      pod: p,
      podStatus: status(),
      previousStatuses: [
        { name: 'app', image: 'busybox', imageID: '', ready: true, restartCount: 0, state: { running: {} } },
      ],
      containers: p.spec!.containers,
      hasInitContainers: false,
      isInitContainer: false,
      reasonCache: new ReasonCache(),
    });
    expect(statuses[0]?.lastState?.terminated).toMatchObject({
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
    });
    expect(statuses[0]?.restartCount).toBe(1);
  });

  it('main containers wait in PodInitializing while init containers exist', () => {
    const p = pod();
    const [s] = convertToAPIContainerStatuses({
      pod: p,
      podStatus: status(),
      previousStatuses: undefined,
      containers: p.spec!.containers,
      hasInitContainers: true,
      isInitContainer: false,
      reasonCache: new ReasonCache(),
    });
    expect(s?.state?.waiting?.reason).toBe('PodInitializing');
  });

  it('timestamps are RFC 3339 seconds', () => {
    const c = ctr('exited', {
      startedAt: Date.UTC(2026, 0, 1, 0, 0, 1, 250),
      finishedAt: Date.UTC(2026, 0, 1, 0, 0, 2, 999),
    });
    const [s] = convert(pod('Never'), status(c));
    expect(s?.state?.terminated?.startedAt).toBe('2026-01-01T00:00:01Z');
    expect(s?.state?.terminated?.finishedAt).toBe('2026-01-01T00:00:02Z');
  });
});
