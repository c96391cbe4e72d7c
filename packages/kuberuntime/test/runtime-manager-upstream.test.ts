// Cases from upstream's kuberuntime_manager code and tests that the other suites do not pin:
// sync results of a sandbox config that fails on a restart, how statuses are read back, and
// killPod results. Sandbox creation and container start are in sandbox.test.ts and
// container.test.ts.
import type { Pod } from '@kubelet-kit/core';
import { CriError, type RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatPod, type Harness, harness, makePod, overriding } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

const ids = (pod: Pod) => ({
  uid: pod.metadata!.uid!,
  name: pod.metadata!.name!,
  namespace: pod.metadata!.namespace!,
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
