// sandbox.ts (upstream kuberuntime_sandbox.go): creating a pod's sandbox, and the sandbox's part
// of the pod's status.
import {
  type PodSandboxStatus as CriPodSandboxStatus,
  NamespaceMode,
  PodSandboxState,
} from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createPodSandbox,
  determinePodSandboxIPs,
  podIPsOf,
  type SandboxContext,
  SandboxCreationError,
  toSandboxStatus,
} from '../src/sandbox.js';
import { formatPod, type Harness, harness, makePod, overriding } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

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

describe('createPodSandbox', () => {
  /** A context over a fake RunPodSandbox; `calls` records what happened, in order. */
  function sandboxContext(over: Partial<SandboxContext> = {}) {
    const calls: string[] = [];
    const ctx: SandboxContext = {
      runtimeService: {
        runPodSandbox: async (req) => {
          calls.push(`run:${req.runtimeHandler}`);
          return { podSandboxId: 'sb-1' };
        },
      },
      generatePodSandboxConfig: (_pod, attempt) => {
        calls.push(`config:${attempt}`);
        return { metadata: { attempt } };
      },
      ensureRuntimeStatus: async () => {
        calls.push('status');
      },
      creationCall: (call) => {
        calls.push('queued');
        return call();
      },
      ...over,
    };
    return { ctx, calls };
  }

  it('builds the config, then runs the sandbox through the creation bound with the default handler', async () => {
    const { ctx, calls } = sandboxContext();
    const res = await createPodSandbox(ctx, makePod({ containers: [] }), 2);
    expect(res).toEqual({ podSandboxId: 'sb-1', config: { metadata: { attempt: 2 } } });
    expect(calls).toEqual(['config:2', 'queued', 'run:']);
  });

  it('reads the runtime status first only for a pod in a user namespace', async () => {
    const { ctx, calls } = sandboxContext();
    await createPodSandbox(ctx, makePod({ containers: [], hostUsers: false }), 0);
    expect(calls[0]).toBe('status');
  });

  it('passes the RuntimeClass handler, and fails the config step for an unknown class', async () => {
    const getter = {
      getRuntimeClass: (name: string) =>
        name === 'kata' ? { metadata: { name }, handler: 'kata-qemu' } : undefined,
    };
    const { ctx, calls } = sandboxContext({ runtimeClassGetter: getter });
    await createPodSandbox(ctx, makePod({ containers: [], runtimeClassName: 'kata' }), 0);
    expect(calls).toContain('run:kata-qemu');
    const pod = makePod({ containers: [], runtimeClassName: 'gvisor' });
    const err = await createPodSandbox(ctx, pod, 0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxCreationError);
    expect((err as Error).message).toMatch(
      new RegExp(`^Failed to generate sandbox config for pod "${formatPod(pod).replace(/[()]/g, '\\$&')}": `),
    );
  });

  it('wraps a RunPodSandbox failure with the pod, keeping the runtime error as the cause', async () => {
    const boom = new Error('no network');
    const { ctx } = sandboxContext({
      runtimeService: {
        runPodSandbox: async () => {
          throw boom;
        },
      },
    });
    const pod = makePod({ containers: [] });
    const err = (await createPodSandbox(ctx, pod, 0).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(`Failed to create sandbox for pod "${formatPod(pod)}": no network`);
    expect(err.cause).toBe(boom);
  });
});

describe('sandbox status (upstream determinePodSandboxIPs)', () => {
  const criSandbox = (over: Partial<CriPodSandboxStatus>): CriPodSandboxStatus => ({
    id: 'sb-1',
    metadata: { name: 'web', namespace: 'default', uid: 'u1', attempt: 1 },
    state: PodSandboxState.SANDBOX_READY,
    createdAt: 5_000_000_000,
    network: { ip: '10.0.0.5', additionalIps: [{ ip: 'fd00::5' }] },
    labels: { a: 'b' },
    annotations: {},
    runtimeHandler: '',
    ...over,
  });

  it('takes the primary IP first, then the others; none at all if one does not parse', () => {
    expect(determinePodSandboxIPs(criSandbox({}))).toEqual(['10.0.0.5', 'fd00::5']);
    expect(
      determinePodSandboxIPs(criSandbox({ network: { ip: '', additionalIps: [{ ip: '10.0.0.6' }] } })),
    ).toEqual(['10.0.0.6']);
    expect(
      determinePodSandboxIPs(criSandbox({ network: { ip: '10.0.0.5', additionalIps: [{ ip: 'x' }] } })),
    ).toEqual([]);
    expect(determinePodSandboxIPs(criSandbox({ network: undefined }))).toEqual([]);
  });

  it('converts the status; a host-network sandbox has no IPs of its own', () => {
    expect(toSandboxStatus(criSandbox({}))).toEqual({
      id: 'sb-1',
      name: 'web',
      namespace: 'default',
      uid: 'u1',
      attempt: 1,
      state: 'ready',
      createdAt: 5000,
      ips: ['10.0.0.5', 'fd00::5'],
      hostNetwork: false,
      labels: { a: 'b' },
      annotations: {},
    });
    const host = toSandboxStatus(
      criSandbox({
        state: PodSandboxState.SANDBOX_NOTREADY,
        linux: { namespaces: { options: { network: NamespaceMode.NODE, pid: 0, ipc: 0, targetId: '' } } },
      } as Partial<CriPodSandboxStatus>),
    );
    expect([host.state, host.hostNetwork, host.ips]).toEqual(['notready', true, []]);
  });

  it("gives the pod its newest sandbox's IPs only while that sandbox is ready", () => {
    const ready = toSandboxStatus(criSandbox({}));
    expect(podIPsOf(ready)).toEqual(['10.0.0.5', 'fd00::5']);
    expect(podIPsOf({ ...ready, state: 'notready' })).toEqual([]);
    expect(podIPsOf(undefined)).toEqual([]);
  });
});
