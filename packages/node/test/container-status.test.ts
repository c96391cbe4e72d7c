import type { ContainerStatus, Pod, RuntimeContainerStatus, RuntimePodStatus } from '@kubelet-kit/core';
import { shouldContainerBeRestarted } from '@kubelet-kit/kuberuntime';
import { describe, expect, it } from 'vitest';
import { convertToAPIContainerStatuses } from '../src/container-status.js';
import { ReasonCache } from '../src/reason-cache.js';

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

// Cases from upstream's kubelet_pods_test.go (TestGenerateAPIPodStatusWithReasonCache,
// TestGenerateAPIPodStatusWithSortedContainers, TestGenerateAPIPodStatusWithDifferentRestartPolicies,
// Test_generateAPIPodStatus) and branches of convertToAPIContainerStatuses they exercise.
describe('convertToAPIContainerStatuses (upstream cases)', () => {
  const podOf = (spec: Partial<NonNullable<Pod['spec']>>, deleting = false): Pod => ({
    metadata: {
      name: 'p',
      namespace: 'ns',
      uid: 'uid1',
      ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { containers: [], ...spec },
  });
  const convertWith = (
    p: Pod,
    s: RuntimePodStatus,
    o: {
      init?: boolean;
      previous?: ContainerStatus[];
      reasonCache?: ReasonCache;
    } = {},
  ) =>
    convertToAPIContainerStatuses({
      pod: p,
      podStatus: s,
      previousStatuses: o.previous,
      containers: o.init ? (p.spec?.initContainers ?? []) : (p.spec?.containers ?? []),
      hasInitContainers: (p.spec?.initContainers ?? []).length > 0,
      isInitContainer: o.init ?? false,
      reasonCache: o.reasonCache ?? new ReasonCache(),
    });
  const failing = (...names: string[]) => {
    const cache = new ReasonCache();
    cache.update('uid1', {
      syncResults: names.map((target) => ({
        action: 'StartContainer' as const,
        target,
        error: 'test-error',
        message: '',
      })),
    });
    return cache;
  };

  it('init containers without a status also wait in PodInitializing (the default depends only on init containers existing)', () => {
    const p = podOf({ initContainers: [{ name: 'init' }], containers: [{ name: 'app' }] });
    const [s] = convertWith(p, status(), { init: true });
    expect(s?.state).toEqual({ waiting: { reason: 'PodInitializing' } });
  });

  it('regular container statuses are sorted by name, init container statuses keep spec order (SortedContainerStatuses)', () => {
    const names = ['b', 'c', 'a'];
    const p = podOf({
      initContainers: names.map((name) => ({ name: `i${name}` })),
      containers: names.map((name) => ({ name })),
    });
    expect(convertWith(p, status()).map((s) => s.name)).toEqual(['a', 'b', 'c']);
    expect(convertWith(p, status(), { init: true }).map((s) => s.name)).toEqual(['ib', 'ic', 'ia']);
  });

  it('a running container the runtime now reports as unknown is terminated and counts one more restart', () => {
    const p = podOf({ containers: [{ name: 'app' }] });
    const [s] = convertWith(p, status(ctr('unknown', { restartCount: 2 })), {
      previous: [
        { name: 'app', image: 'busybox', imageID: '', ready: true, restartCount: 2, state: { running: {} } },
      ],
    });
    expect(s?.state?.terminated).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
    expect(s?.restartCount).toBe(3);
  });

  it('a vanished running container that already has a last termination keeps it and its restart count', () => {
    const p = podOf({ containers: [{ name: 'app' }] });
    const lastState = { terminated: { exitCode: 1, reason: 'Error' } };
    const [s] = convertWith(p, status(), {
      previous: [
        {
          name: 'app',
          image: 'busybox',
          imageID: '',
          ready: true,
          restartCount: 4,
          state: { running: {} },
          lastState,
        },
      ],
    });
    expect(s?.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(s?.lastState).toEqual(lastState);
    expect(s?.restartCount).toBe(4);
  });

  it('a vanished running container of a deleted pod does not count a restart ("with previous statuses and deletion")', () => {
    const p = podOf({ containers: [{ name: 'a' }, { name: 'b' }] }, true);
    const running = (name: string): ContainerStatus => ({
      name,
      image: '',
      imageID: '',
      ready: true,
      restartCount: 0,
      state: { running: {} },
    });
    const statuses = convertWith(p, status(), { previous: [running('a'), running('b')] });
    for (const s of statuses) {
      expect(s.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
      expect(s.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
      expect(s.restartCount).toBe(0);
    }
  });

  it('a container with no runtime record keeps the last termination of its old status', () => {
    const p = podOf({ containers: [{ name: 'with-old-record' }, { name: 'without-old-record' }] });
    const statuses = convertWith(p, status(), {
      previous: [
        {
          name: 'with-old-record',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 1,
          state: { waiting: {} },
          lastState: { terminated: { exitCode: 0 } },
        },
      ],
    });
    expect(statuses.map((s) => [s.state, s.lastState])).toEqual([
      [{ waiting: { reason: 'ContainerCreating' } }, { terminated: { exitCode: 0 } }],
      [{ waiting: { reason: 'ContainerCreating' } }, undefined],
    ]);
  });

  it('a container the runtime holds only its newest run of has no last state, whatever the old status had (v1.34)', () => {
    // v1.34 builds a container the runtime reports afresh from that record: the old status's
    // lastState is carried over only for a container with no runtime record at all (above). An
    // OnFailure pod whose failed run was collected ends without lastState, as upstream (#101044).
    const p = podOf({ restartPolicy: 'OnFailure', containers: [{ name: 'job' }] });
    const [job] = convertWith(p, status(ctr('exited', { name: 'job', exitCode: 0, restartCount: 1 })), {
      previous: [
        {
          name: 'job',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 1,
          state: { terminated: { exitCode: 0 } },
          lastState: { terminated: { exitCode: 1, reason: 'Error' } },
        },
      ],
    });
    expect(job?.state?.terminated?.exitCode).toBe(0);
    expect(job?.restartCount).toBe(1);
    expect(job?.lastState ?? {}).toEqual({});
  });

  it.each([
    ['Never', { failed: 'terminated', succeed: 'terminated' }],
    ['OnFailure', { failed: 'waiting', succeed: 'terminated' }],
    ['Always', { failed: 'waiting', succeed: 'waiting' }],
  ] as const)(
    'a start failure shows as Waiting only for a container that restarts (restartPolicy %s)',
    (policy, want) => {
      const p = podOf({ restartPolicy: policy, containers: [{ name: 'failed' }, { name: 'succeed' }] });
      const older = [
        ctr('exited', { name: 'succeed', exitCode: 2 }),
        ctr('exited', { name: 'failed', exitCode: 3 }),
      ];
      const newer = [
        ctr('exited', { name: 'succeed', exitCode: 0 }),
        ctr('exited', { name: 'failed', exitCode: 1 }),
      ];
      // The runtime lists a pod's containers newest first.
      const s = status(...newer, ...older);
      const [failed, succeed] = convertWith(p, s, { reasonCache: failing('failed', 'succeed') });
      expect(Object.keys(failed?.state ?? {})).toEqual([want.failed]);
      expect(Object.keys(succeed?.state ?? {})).toEqual([want.succeed]);
      // The newest run is the last state when a Waiting reason replaces it, otherwise the run before.
      expect(failed?.lastState?.terminated?.exitCode).toBe(want.failed === 'waiting' ? 1 : 3);
      expect(succeed?.lastState?.terminated?.exitCode).toBe(want.succeed === 'waiting' ? 0 : 2);
    },
  );

  it('an init container that exited 0 stays terminated even under Always with a start failure recorded', () => {
    const p = podOf({
      restartPolicy: 'Always',
      initContainers: [{ name: 'init' }],
      containers: [{ name: 'app' }],
    });
    const [s] = convertWith(p, status(ctr('exited', { name: 'init', exitCode: 0 })), {
      init: true,
      reasonCache: failing('init'),
    });
    expect(s?.state?.terminated?.exitCode).toBe(0);
  });

  it('reports the volume mounts of a container that has not run yet, read-only ones as not recursive', () => {
    const p = podOf({
      containers: [
        {
          name: 'app',
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'token', mountPath: '/var/run/secrets', readOnly: true },
          ],
        },
      ],
    });
    const [s] = convertWith(p, status());
    expect(s?.volumeMounts).toEqual([
      { name: 'data', mountPath: '/data' },
      { name: 'token', mountPath: '/var/run/secrets', readOnly: true, recursiveReadOnly: 'Disabled' },
    ]);
  });

  it('a container read from the runtime keeps the volume mounts of its old status, and has none without one', () => {
    const p = podOf({ containers: [{ name: 'app', volumeMounts: [{ name: 'data', mountPath: '/data' }] }] });
    const volumeMounts = [{ name: 'data', mountPath: '/data' }];
    const [withOld] = convertWith(p, status(ctr('running')), {
      previous: [
        {
          name: 'app',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: {} },
          volumeMounts,
        },
      ],
    });
    expect(withOld?.volumeMounts).toEqual(volumeMounts);
    const [withoutOld] = convertWith(p, status(ctr('running')));
    expect(withoutOld?.volumeMounts).toBeUndefined();
  });
});

describe('container user', () => {
  it("reports the runtime's user of the first process, and none when the runtime reports none", () => {
    const user = { linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 5000] } };
    const [withUser] = convert(pod(), status(ctr('running', { user })));
    expect(withUser?.user).toEqual(user);
    const [without] = convert(pod(), status(ctr('running')));
    expect(without?.user).toBeUndefined();
  });
});
