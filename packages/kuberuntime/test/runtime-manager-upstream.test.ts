// Cases from upstream's kuberuntime_manager / kuberuntime_container / kuberuntime_sandbox code
// and tests that the other suites do not pin: sync results and events of each failure of
// sandbox creation and container start, and how statuses are read back.
import type { Pod } from '@kubelet-kit/core';
import { CriError, type RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RuntimeService } from '../src/index.js';
import { type Harness, harness, makePod } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

/** The runtime service with some methods replaced (each override gets the real client). */
function overriding(
  rs: RuntimeServiceClient,
  overrides: Partial<Record<keyof RuntimeService, (real: RuntimeServiceClient, req: never) => unknown>>,
): RuntimeService {
  return new Proxy(rs, {
    get(target, key, receiver) {
      const override = overrides[key as keyof RuntimeService];
      if (override) return (req: never) => override(target, req);
      const value = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const ids = (pod: Pod) => ({
  uid: pod.metadata!.uid!,
  name: pod.metadata!.name!,
  namespace: pod.metadata!.namespace!,
});
const formatPod = (pod: Pod) => `${pod.metadata!.name}_${pod.metadata!.namespace}(${pod.metadata!.uid})`;

describe('createPodSandbox failures (upstream SyncPod step 4 and createPodSandbox)', () => {
  it('reports the RunPodSandbox error under the formatted pod, with upstream messages', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    h.server.failNext('RunPodSandbox', 1, 'Unavailable', 'CNI is down');
    const r = await h.sync(pod);
    expect(r.syncResults.find((x) => x.action === 'CreatePodSandbox')).toEqual({
      action: 'CreatePodSandbox',
      target: formatPod(pod),
      error: 'CreatePodSandboxError',
      message: `Failed to create sandbox for pod "${formatPod(pod)}": rpc error: code = Unavailable desc = CNI is down`,
    });
    expect(h.recorder.events.find((e) => e.reason === 'FailedCreatePodSandBox')!.message).toBe(
      'Failed to create pod sandbox: rpc error: code = Unavailable desc = CNI is down',
    );
  });

  it('a config that cannot be generated is reported as such', async () => {
    const pod = makePod({
      containers: [{ name: 'c', image: 'busybox:v2' }],
      hostname: 'h'.repeat(35),
      subdomain: 'sub',
      setHostnameAsFQDN: true,
    });
    const r = await h.sync(pod);
    const create = r.syncResults.find((x) => x.action === 'CreatePodSandbox')!;
    expect(create.error).toBe('CreatePodSandboxError');
    expect(create.message).toMatch(
      new RegExp(`^Failed to generate sandbox config for pod "${formatPod(pod).replace(/[()]/g, '\\$&')}": `),
    );
  });

  // TestSyncPodWithSandboxAndDeletedPod: a pod being deleted whose sandbox cannot be created
  // gives no sync error and no event.
  it('a pod being deleted whose sandbox fails is no error', async () => {
    const pod = makePod(
      { containers: [{ name: 'c', image: 'busybox:v2' }] },
      { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 30 },
    );
    h.server.failNext('RunPodSandbox', 1, 'Unknown', 'simulated error');
    const r = await h.sync(pod);
    expect(r.syncError).toBeUndefined();
    expect(r.syncResults.filter((x) => x.error !== undefined)).toEqual([]);
    expect(r.syncResults.some((x) => x.action === 'StartContainer')).toBe(false);
    expect(h.recorder.events.some((e) => e.reason === 'FailedCreatePodSandBox')).toBe(false);
  });

  it('a new sandbox whose status cannot be read fails the sync with FailedStatusPodSandBox', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    const podStatus = await h.status(pod);
    h.server.failNext('PodSandboxStatus', 1, 'Internal', 'boom');
    const r = await h.manager.syncPod({ pod, podStatus, pullSecrets: [], backOff: h.backOff });
    expect(r.syncError).toBeDefined();
    expect(r.syncResults.some((x) => x.action === 'StartContainer')).toBe(false);
    expect(h.recorder.events.find((e) => e.reason === 'FailedStatusPodSandBox')!.message).toBe(
      'Unable to get pod sandbox status: rpc error: code = Internal desc = boom',
    );
  });

  it('a new sandbox with a nil status fails the sync', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    const podStatus = await h.status(pod);
    const manager = h.newManager({
      runtimeService: overriding(h.rs, { podSandboxStatus: () => Promise.resolve({ info: {} }) }),
    });
    const r = await manager.syncPod({ pod, podStatus, pullSecrets: [], backOff: h.backOff });
    expect(r.syncError?.message).toBe('pod sandbox status is nil');
    expect(r.syncResults.some((x) => x.action === 'StartContainer')).toBe(false);
  });
});

// SyncPod: once the sandbox is there, a sandbox config that cannot be generated is a
// ConfigPodSandbox failure (target: the sandbox ID) and no container is started.
it('a sandbox config that cannot be generated for a restart is ConfigPodSandboxError', async () => {
  const pod = makePod({
    containers: [
      { name: 'a', image: 'busybox:v2' },
      { name: 'b', image: 'busybox:v2' },
    ],
  });
  await h.sync(pod);
  const before = await h.status(pod);
  for (const c of before.containerStatuses) h.server.exitContainer(c.id.id, 1);
  const manager = h.newManager({
    cgroupParent: () => {
      throw new Error('no cgroup for this pod');
    },
  });
  h.server.clearCalls();
  const r = await manager.syncPod({
    pod,
    podStatus: await h.status(pod),
    pullSecrets: [],
    backOff: h.backOff,
  });
  expect(r.syncResults).toEqual([
    {
      action: 'ConfigPodSandbox',
      target: before.sandboxStatuses[0]!.id,
      error: 'ConfigPodSandboxError',
      message: `GeneratePodSandboxConfig for pod "${formatPod(pod)}" failed: no cgroup for this pod`,
    },
  ]);
  expect(h.server.calls('CreateContainer')).toHaveLength(0);
});

describe('startContainer steps (upstream kuberuntime_container.go)', () => {
  const eventsOf = (reason: string) => h.recorder.events.filter((e) => e.reason === reason);

  it('records Created and Started on the container, with upstream messages', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    expect(eventsOf('Created').map((e) => [e.object.fieldPath, e.message])).toEqual([
      ['spec.containers{c}', 'Created container: c'],
    ]);
    expect(eventsOf('Started').map((e) => [e.object.fieldPath, e.message])).toEqual([
      ['spec.containers{c}', 'Started container c'],
    ]);
  });

  // EnsureImageExists fails with a bare reason error, so the container's Failed event reads
  // "Error: <reason>" (the image manager's own event carries the detail).
  it('an image failure records "Error: <reason>" on the container', async () => {
    const pod = makePod({
      containers: [
        { name: 'never', image: 'localhost/absent:1', imagePullPolicy: 'Never' },
        { name: 'pull', image: 'localhost/absent:2', imagePullPolicy: 'Always' },
      ],
    });
    h.server.setPullUnknownImages('NotFound');
    const r = await h.sync(pod);
    expect(r.syncResults.filter((x) => x.action === 'StartContainer').map((x) => x.error)).toEqual([
      'ErrImageNeverPull',
      'ErrImagePull',
    ]);
    expect(eventsOf('Failed').map((e) => [e.object.fieldPath, e.message])).toEqual([
      ['spec.containers{never}', 'Error: ErrImageNeverPull'],
      ['spec.containers{pull}', expect.stringMatching(/^Failed to pull image "localhost\/absent:2": /)],
      ['spec.containers{pull}', 'Error: ErrImagePull'],
    ]);
  });

  it('a config error is CreateContainerConfigError with a Failed event, and nothing is created', async () => {
    const pod = makePod({
      containers: [
        {
          name: 'c',
          image: 'busybox:v2',
          env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } }],
        },
      ],
    });
    const r = await h.sync(pod);
    const start = r.syncResults.find((x) => x.action === 'StartContainer')!;
    expect(start.error).toBe('CreateContainerConfigError');
    expect(eventsOf('Failed').map((e) => e.message)).toEqual([`Error: ${start.message}`]);
    expect(h.server.calls('CreateContainer')).toHaveLength(0);
    expect(eventsOf('Created')).toEqual([]);
  });

  it('a failed CreateContainer is CreateContainerError with the runtime message', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    h.server.failNext('CreateContainer', 1, 'Unknown', 'no space left');
    const r = await h.sync(pod);
    expect(r.syncResults.find((x) => x.action === 'StartContainer')).toMatchObject({
      error: 'CreateContainerError',
      message: 'no space left',
    });
    expect(eventsOf('Failed').map((e) => e.message)).toEqual(['Error: no space left']);
    expect(eventsOf('Created')).toEqual([]);
  });

  // recordContainerEvent: a runtime error naming the container ID is recorded with the
  // container's name instead (the sync result keeps the runtime's message).
  it('a failed StartContainer is RunContainerError; its event names the container, not its ID', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    let startedId = '';
    const manager = h.newManager({
      runtimeService: overriding(h.rs, {
        startContainer: (_real, req: { containerId: string }) => {
          startedId = req.containerId;
          return Promise.reject(
            new CriError({
              grpcStatus: 2,
              details: `failed to start ${req.containerId}: exec format error`,
              method: 'StartContainer',
            }),
          );
        },
      }),
    });
    const podStatus = await h.status(pod);
    const r = await manager.syncPod({ pod, podStatus, pullSecrets: [], backOff: h.backOff });
    expect(r.syncResults.find((x) => x.action === 'StartContainer')).toMatchObject({
      error: 'RunContainerError',
      message: `failed to start ${startedId}: exec format error`,
    });
    expect(eventsOf('Failed').map((e) => e.message)).toEqual(['Error: failed to start c: exec format error']);
    expect(eventsOf('Created')).toHaveLength(1);
    expect(eventsOf('Started')).toEqual([]);
  });
});

describe('getPodStatus (upstream GetPodStatus, toKubeContainerStatus, determinePodSandboxIPs)', () => {
  it("prefers the runtime's image ID to the image ref, and keeps the ref", async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const withImageId = <T extends { imageRef: string; imageId: string }>(x: T): T => ({
      ...x,
      imageId: 'sha256:config',
    });
    const manager = h.newManager({
      runtimeService: overriding(h.rs, {
        containerStatus: async (real, req: Parameters<RuntimeServiceClient['containerStatus']>[0]) => {
          const res = await real.containerStatus(req);
          return { ...res, status: res.status && withImageId(res.status) };
        },
        listContainers: async (real, req: Parameters<RuntimeServiceClient['listContainers']>[0]) => {
          const res = await real.listContainers(req);
          return { ...res, containers: res.containers.map(withImageId) };
        },
      }),
    });
    const status = await manager.getPodStatus(ids(pod));
    const ref = status.containerStatuses[0]!.imageRef;
    expect(ref).toBeTruthy();
    expect(ref).not.toBe('sha256:config');
    expect(status.containerStatuses[0]!.imageId).toBe('sha256:config');
    const pods = await manager.getPods(true);
    expect(pods.find((p) => p.id === pod.metadata!.uid)!.containers[0]!.imageId).toBe('sha256:config');
  });

  const withNetwork = (network: { ip: string; additionalIps: { ip: string }[] }) =>
    h.newManager({
      runtimeService: overriding(h.rs, {
        podSandboxStatus: async (real, req: Parameters<RuntimeServiceClient['podSandboxStatus']>[0]) => {
          const res = await real.podSandboxStatus(req);
          return { ...res, status: res.status && { ...res.status, network } };
        },
      }),
    });

  it('takes additional IPs even without a primary one', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const status = await withNetwork({ ip: '', additionalIps: [{ ip: 'fd00::5' }] }).getPodStatus(ids(pod));
    expect(status.ips).toEqual(['fd00::5']);
  });

  it('reports no IPs when the runtime reports one that does not parse', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const bad = await withNetwork({ ip: '10.0.0.300', additionalIps: [] }).getPodStatus(ids(pod));
    expect(bad.ips).toEqual([]);
    const badExtra = await withNetwork({ ip: '10.0.0.3', additionalIps: [{ ip: 'nope' }] }).getPodStatus(
      ids(pod),
    );
    expect(badExtra.ips).toEqual([]);
    const good = await withNetwork({ ip: '10.0.0.3', additionalIps: [{ ip: 'fd00::3' }] }).getPodStatus(
      ids(pod),
    );
    expect(good.ips).toEqual(['10.0.0.3', 'fd00::3']);
  });

  // Only the newest listed sandbox (index 0) gives the IPs: one removed after the listing
  // leaves the pod without IPs rather than taking an older sandbox's.
  it('takes no IPs from an older sandbox when the newest one is gone', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const manager = h.newManager({
      runtimeService: overriding(h.rs, {
        listPodSandbox: async (real, req: Parameters<RuntimeServiceClient['listPodSandbox']>[0]) => {
          const res = await real.listPodSandbox(req);
          const newest = res.items[0]!;
          return {
            ...res,
            items: [...res.items, { ...newest, id: 'gone', createdAt: newest.createdAt + 1e9 }],
          };
        },
        podSandboxStatus: (real, req: Parameters<RuntimeServiceClient['podSandboxStatus']>[0]) =>
          req.podSandboxId === 'gone'
            ? Promise.reject(
                new CriError({ grpcStatus: 5, details: 'not found', method: 'PodSandboxStatus' }),
              )
            : real.podSandboxStatus(req),
      }),
    });
    const status = await manager.getPodStatus(ids(pod));
    expect(status.sandboxStatuses.map((s) => s.state)).toEqual(['ready']);
    expect(status.ips).toEqual([]);
  });
});

// killPodWithSyncResult: each failure is reported with the runtime's error as Go prints it; a
// sandbox already gone is no failure.
describe('killPod results (upstream killPodWithSyncResult)', () => {
  it('reports failed StopContainer and StopPodSandbox calls with their errors', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const runningPod = (await h.manager.getPods(false)).find((p) => p.id === pod.metadata!.uid)!;
    h.server.failNext('StopContainer', 1, 'Internal', 'stuck');
    h.server.failNext('StopPodSandbox', 1, 'Unavailable', 'network teardown failed');
    const r = await h.manager.killPod({ pod, runningPod });
    expect(r.syncResults).toEqual([
      {
        action: 'KillContainer',
        target: 'c',
        error: 'KillContainerError',
        message: 'rpc error: code = Internal desc = stuck',
      },
      {
        action: 'KillPodSandbox',
        target: pod.metadata!.uid,
        error: 'KillPodSandboxError',
        message: 'rpc error: code = Unavailable desc = network teardown failed',
      },
    ]);
    h.server.failNext('StopPodSandbox', 1, 'NotFound', 'gone');
    const again = await h.manager.killPod({ pod, runningPod });
    expect(again.syncResults.filter((x) => x.error !== undefined)).toEqual([]);
  });
});
