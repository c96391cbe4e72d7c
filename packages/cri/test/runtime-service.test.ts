import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ContainerState,
  type CreateContainerRequest,
  CriError,
  NamespaceMode,
  PodSandboxState,
  type RuntimeServiceClient,
} from '@kubelet-kit/cri';
import { describe, expect, test } from 'vitest';
import { containerConfig, harness, sandboxConfig } from './helpers.js';

async function runningContainer(
  runtime: RuntimeServiceClient,
  name = 'p',
  extra: Record<string, unknown> = {},
) {
  const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig(name, extra) });
  const { containerId } = await runtime.createContainer({ podSandboxId, config: containerConfig('c') });
  await runtime.startContainer({ containerId });
  return { podSandboxId, containerId };
}

describe('runtime info', () => {
  test('Version reports the runtime and API version', async () => {
    const { runtime } = await harness({ runtimeName: 'fake', runtimeVersion: '9.9' });
    expect(await runtime.version({ version: 'v1' })).toEqual({
      version: '0.1.0',
      runtimeName: 'fake',
      runtimeVersion: '9.9',
      runtimeApiVersion: 'v1',
    });
  });

  test('Status reports the configured conditions', async () => {
    const { server, runtime } = await harness({ networkReady: false });
    let conditions = (await runtime.status()).status?.conditions;
    expect(conditions?.map((c) => [c.type, c.status])).toEqual([
      ['RuntimeReady', true],
      ['NetworkReady', false],
    ]);
    server.setRuntimeCondition('RuntimeReady', { status: false, reason: 'Broken', message: 'no shim' });
    conditions = (await runtime.status({ verbose: true })).status?.conditions;
    expect(conditions?.[0]).toEqual({
      type: 'RuntimeReady',
      status: false,
      reason: 'Broken',
      message: 'no shim',
    });
  });

  test('UpdateRuntimeConfig stores the pod CIDR', async () => {
    const { server, runtime } = await harness();
    await runtime.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.1.0.0/24' } } });
    expect(server.podCidr).toBe('10.1.0.0/24');
  });
});

describe('pod sandboxes', () => {
  test('run, status, list, stop and remove', async () => {
    const { runtime } = await harness();
    const { podSandboxId } = await runtime.runPodSandbox({
      config: sandboxConfig('web'),
      runtimeHandler: '',
    });
    expect(podSandboxId).toMatch(/^[0-9a-f]{64}$/);

    const status = await runtime.podSandboxStatus({ podSandboxId });
    expect(status.status?.state).toBe(PodSandboxState.SANDBOX_READY);
    expect(status.status?.metadata).toEqual({
      name: 'web',
      namespace: 'default',
      uid: 'uid-web',
      attempt: 0,
    });
    expect(status.status?.network?.ip).toMatch(/^10\.88\.\d+\.\d+$/);
    expect(status.status?.createdAt).toBeGreaterThan(1e18);
    expect(status.status?.labels).toEqual({ app: 'web', 'kubelet-kit/test': 'cri' });

    expect((await runtime.listPodSandbox()).items.map((s) => s.id)).toEqual([podSandboxId]);
    await runtime.stopPodSandbox({ podSandboxId });
    await runtime.stopPodSandbox({ podSandboxId }); // idempotent
    const stopped = (await runtime.podSandboxStatus({ podSandboxId })).status;
    expect(stopped?.state).toBe(PodSandboxState.SANDBOX_NOTREADY);
    expect(stopped?.network?.ip).toBe(''); // containerd reports no IP once the network is torn down
    await runtime.removePodSandbox({ podSandboxId });
    await runtime.removePodSandbox({ podSandboxId }); // idempotent
    expect((await runtime.listPodSandbox()).items).toEqual([]);
    await expect(runtime.podSandboxStatus({ podSandboxId })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(runtime.stopPodSandbox({ podSandboxId })).rejects.toMatchObject({ code: 'NotFound' });
  });

  test('each pod-network sandbox gets its own IP; host-network sandboxes get none', async () => {
    const { runtime } = await harness({ podSubnet: '10.244.0.0/16' });
    const a = await runtime.runPodSandbox({ config: sandboxConfig('a') });
    const b = await runtime.runPodSandbox({ config: sandboxConfig('b') });
    const host = await runtime.runPodSandbox({
      config: sandboxConfig('h', {
        linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
      }),
    });
    const ip = async (podSandboxId: string) =>
      (await runtime.podSandboxStatus({ podSandboxId })).status?.network?.ip;
    const [ipA, ipB, ipHost] = [
      await ip(a.podSandboxId),
      await ip(b.podSandboxId),
      await ip(host.podSandboxId),
    ];
    expect(ipA).toMatch(/^10\.244\./);
    expect(ipB).toMatch(/^10\.244\./);
    expect(ipA).not.toBe(ipB);
    expect(ipHost).toBe('');
  });

  test('a host-network sandbox with a hostname fails like runc', async () => {
    const { runtime } = await harness();
    const config = sandboxConfig('h', {
      hostname: 'h',
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
    });
    await expect(runtime.runPodSandbox({ config })).rejects.toMatchObject({
      code: 'Unknown',
      details: expect.stringContaining('unable to set hostname without a private UTS namespace'),
    });
  });

  test('the same sandbox metadata cannot be run twice', async () => {
    const { runtime } = await harness();
    await runtime.runPodSandbox({ config: sandboxConfig('dup') });
    await expect(runtime.runPodSandbox({ config: sandboxConfig('dup') })).rejects.toMatchObject({
      code: 'Unknown',
      details: expect.stringContaining('failed to reserve sandbox name'),
    });
  });

  test('ListPodSandbox filters by id prefix, state and labels', async () => {
    const { runtime } = await harness();
    const a = await runtime.runPodSandbox({ config: sandboxConfig('a') });
    const b = await runtime.runPodSandbox({ config: sandboxConfig('b') });
    await runtime.stopPodSandbox({ podSandboxId: b.podSandboxId });
    const ids = async (filter: Parameters<RuntimeServiceClient['listPodSandbox']>[0]) =>
      (await runtime.listPodSandbox(filter)).items.map((s) => s.id).sort();
    expect(await ids({ filter: { id: a.podSandboxId.slice(0, 12) } })).toEqual([a.podSandboxId]);
    expect(await ids({ filter: { state: { state: PodSandboxState.SANDBOX_READY } } })).toEqual([
      a.podSandboxId,
    ]);
    expect(await ids({ filter: { state: { state: PodSandboxState.SANDBOX_NOTREADY } } })).toEqual([
      b.podSandboxId,
    ]);
    expect(await ids({ filter: { labelSelector: { app: 'b' } } })).toEqual([b.podSandboxId]);
    expect(await ids({ filter: { labelSelector: { 'kubelet-kit/test': 'cri' } } })).toEqual(
      [a.podSandboxId, b.podSandboxId].sort(),
    );
    expect(await ids({ filter: { labelSelector: { app: 'zzz' } } })).toEqual([]);
  });
});

describe('containers', () => {
  test('CREATED → RUNNING → EXITED with timestamps, exit code and reason', async () => {
    const { runtime } = await harness({ stopExitCode: 2 });
    const { podSandboxId } = await runtime.runPodSandbox({
      config: sandboxConfig('p', { logDirectory: '/tmp/x' }),
    });
    const { containerId } = await runtime.createContainer({
      podSandboxId,
      config: containerConfig('c', { logPath: 'c/0.log', annotations: { a: 'b' } }),
    });
    let s = (await runtime.containerStatus({ containerId })).status;
    expect(s?.state).toBe(ContainerState.CONTAINER_CREATED);
    expect(s?.createdAt).toBeGreaterThan(0);
    expect(s?.startedAt).toBe(0);
    expect(s?.logPath).toBe('/tmp/x/c/0.log');
    expect(s?.annotations).toEqual({ a: 'b' });
    expect(s?.imageRef).toMatch(/^sha256:/);

    await runtime.startContainer({ containerId });
    s = (await runtime.containerStatus({ containerId })).status;
    expect(s?.state).toBe(ContainerState.CONTAINER_RUNNING);
    expect(s?.startedAt).toBeGreaterThanOrEqual(s?.createdAt ?? Number.POSITIVE_INFINITY);
    await expect(runtime.startContainer({ containerId })).rejects.toMatchObject({
      code: 'Unknown',
      details: expect.stringContaining('container is in CONTAINER_RUNNING state'),
    });

    await runtime.stopContainer({ containerId, timeout: 1 }); // graceful: stopExitCode
    s = (await runtime.containerStatus({ containerId })).status;
    expect(s).toMatchObject({ state: ContainerState.CONTAINER_EXITED, exitCode: 2, reason: 'Error' });
    expect(s?.finishedAt).toBeGreaterThanOrEqual(s?.startedAt ?? Number.POSITIVE_INFINITY);
    await runtime.stopContainer({ containerId, timeout: 0 }); // exited: still OK
    await runtime.removeContainer({ containerId });
    await runtime.removeContainer({ containerId }); // idempotent
    await expect(runtime.containerStatus({ containerId })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(runtime.stopContainer({ containerId })).rejects.toMatchObject({ code: 'NotFound' });
  });

  test('exitContainer makes a running container exit with the given code', async () => {
    const { server, runtime } = await harness();
    const { containerId } = await runningContainer(runtime);
    server.exitContainer(containerId, 0);
    expect((await runtime.containerStatus({ containerId })).status).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      exitCode: 0,
      reason: 'Completed',
    });
    const other = await runningContainer(runtime, 'q');
    server.exitContainer(other.containerId, 137, { reason: 'OOMKilled', message: 'out of memory' });
    expect((await runtime.containerStatus({ containerId: other.containerId })).status).toMatchObject({
      exitCode: 137,
      reason: 'OOMKilled',
      message: 'out of memory',
    });
    expect(() => server.exitContainer(containerId, 1)).toThrow(/not running/);
  });

  test('onContainerStarted hears started containers with their command and pod annotations', async () => {
    const { server, runtime } = await harness({ recordCalls: false });
    const heard: unknown[] = [];
    const off = server.onContainerStarted((c) => heard.push(c));
    const { podSandboxId } = await runtime.runPodSandbox({
      config: sandboxConfig('p', { annotations: { 'example.com/a': '1' } }),
    });
    const { containerId } = await runtime.createContainer({
      podSandboxId,
      config: containerConfig('c', { args: ['x'], annotations: { 'io.kubernetes.container.hash': 'h' } }),
    });
    expect(heard).toEqual([]); // created, not started
    await runtime.startContainer({ containerId });
    expect(heard).toEqual([
      {
        id: containerId,
        podSandboxId,
        name: 'c',
        attempt: 0,
        command: ['sh', '-c', 'sleep 3600'],
        args: ['x'],
        labels: { container: 'c' },
        annotations: { 'io.kubernetes.container.hash': 'h' },
        sandbox: {
          name: 'p',
          namespace: 'default',
          uid: 'uid-p',
          labels: { app: 'p', 'kubelet-kit/test': 'cri' },
          annotations: { 'example.com/a': '1' },
        },
      },
    ]);
    off();
    await runningContainer(runtime, 'q');
    expect(heard).toHaveLength(1);
    // recordCalls: false keeps no call log.
    expect(server.calls()).toEqual([]);
  });

  test('StopContainer without a grace period kills (137); resources are reported and updated', async () => {
    const { runtime } = await harness();
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('p') });
    const { containerId } = await runtime.createContainer({
      podSandboxId,
      config: containerConfig('c', { linux: { resources: { cpuShares: 256, memoryLimitInBytes: 1 << 20 } } }),
    });
    let s = (await runtime.containerStatus({ containerId })).status;
    expect(s?.resources?.linux).toMatchObject({ cpuShares: 256, memoryLimitInBytes: 1 << 20, cpuQuota: 0 });
    expect(s?.imageId).toBe(''); // containerd 1.6 does not fill image_id
    await runtime.updateContainerResources({
      containerId,
      linux: { cpuShares: 512, memoryLimitInBytes: 1 << 21 },
    });
    await runtime.startContainer({ containerId });
    await runtime.stopContainer({ containerId, timeout: 0 });
    s = (await runtime.containerStatus({ containerId })).status;
    expect(s).toMatchObject({ exitCode: 137, reason: 'Error' });
    expect(s?.resources?.linux).toMatchObject({ cpuShares: 512, memoryLimitInBytes: 1 << 21, cpuQuota: 0 });
  });

  test('stopping a created container leaves it created', async () => {
    const { runtime } = await harness();
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('p') });
    const { containerId } = await runtime.createContainer({ podSandboxId, config: containerConfig('c') });
    await runtime.stopContainer({ containerId });
    expect((await runtime.containerStatus({ containerId })).status?.state).toBe(
      ContainerState.CONTAINER_CREATED,
    );
  });

  test('RemoveContainer forcibly removes a running container (CRI contract, containerd)', async () => {
    const { runtime } = await harness();
    const { containerId } = await runningContainer(runtime);
    await runtime.removeContainer({ containerId });
    expect((await runtime.listContainers()).containers).toEqual([]);
  });

  test('StopPodSandbox stops its containers; RemovePodSandbox removes them', async () => {
    const { runtime } = await harness();
    const { podSandboxId, containerId } = await runningContainer(runtime);
    const other = await runningContainer(runtime, 'other');
    await runtime.stopPodSandbox({ podSandboxId });
    expect((await runtime.containerStatus({ containerId })).status).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      exitCode: 137,
    });
    expect((await runtime.containerStatus({ containerId: other.containerId })).status?.state).toBe(
      ContainerState.CONTAINER_RUNNING,
    );
    // containerd: no container can be created in a stopped sandbox.
    await expect(
      runtime.createContainer({ podSandboxId, config: containerConfig('late') }),
    ).rejects.toMatchObject({
      code: 'NotFound',
      details: expect.stringContaining('no running task found'),
    });
    await runtime.removePodSandbox({ podSandboxId });
    const left = (await runtime.listContainers()).containers.map((c) => c.id);
    expect(left).toEqual([other.containerId]);
    // A graceful StopContainer reports SIGTERM's 143 by default.
    await runtime.stopContainer({ containerId: other.containerId, timeout: 30 });
    expect((await runtime.containerStatus({ containerId: other.containerId })).status?.exitCode).toBe(143);
  });

  test('CreateContainer needs an existing sandbox, a present image and a free name', async () => {
    const { runtime } = await harness();
    await expect(
      runtime.createContainer({ podSandboxId: 'nope', config: containerConfig('c') }),
    ).rejects.toMatchObject({ code: 'NotFound' });
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('p') });
    await expect(
      runtime.createContainer({
        podSandboxId,
        config: containerConfig('c', { image: { image: 'missing:1' } }),
      }),
    ).rejects.toMatchObject({ code: 'NotFound', details: expect.stringContaining('missing:1') });
    await runtime.createContainer({ podSandboxId, config: containerConfig('c') });
    await expect(
      runtime.createContainer({ podSandboxId, config: containerConfig('c') }),
    ).rejects.toMatchObject({
      code: 'Unknown',
      details: expect.stringContaining('failed to reserve container name'),
    });
  });

  test('ListContainers filters by id, state, sandbox and labels', async () => {
    const { server, runtime } = await harness();
    const a = await runningContainer(runtime, 'a');
    const b = await runningContainer(runtime, 'b');
    server.exitContainer(b.containerId, 2);
    const ids = async (filter: Parameters<RuntimeServiceClient['listContainers']>[0]) =>
      (await runtime.listContainers(filter)).containers.map((c) => c.id).sort();
    expect(await ids({})).toEqual([a.containerId, b.containerId].sort());
    expect(await ids({ filter: { id: a.containerId.slice(0, 10) } })).toEqual([a.containerId]);
    expect(await ids({ filter: { state: { state: ContainerState.CONTAINER_RUNNING } } })).toEqual([
      a.containerId,
    ]);
    expect(await ids({ filter: { state: { state: ContainerState.CONTAINER_EXITED } } })).toEqual([
      b.containerId,
    ]);
    expect(await ids({ filter: { podSandboxId: b.podSandboxId } })).toEqual([b.containerId]);
    expect(await ids({ filter: { labelSelector: { container: 'c' } } })).toHaveLength(2);
    expect(await ids({ filter: { labelSelector: { container: 'x' } } })).toEqual([]);
    const listed = (await runtime.listContainers({ filter: { id: a.containerId } })).containers[0];
    expect(listed).toMatchObject({ podSandboxId: a.podSandboxId, metadata: { name: 'c', attempt: 0 } });
  });

  test("lists filtered by the kubelet's pod UID label follow creation, stop and removal", async () => {
    const { runtime } = await harness();
    const uidLabel = 'io.kubernetes.pod.uid';
    const make = async (uid: string) => {
      const config = sandboxConfig(uid, { labels: { [uidLabel]: uid } });
      const { podSandboxId } = await runtime.runPodSandbox({ config });
      const { containerId } = await runtime.createContainer({
        podSandboxId,
        config: containerConfig('c', { labels: { container: 'c', [uidLabel]: uid } }),
        sandboxConfig: config,
      });
      await runtime.startContainer({ containerId });
      return { podSandboxId, containerId };
    };
    const a = await make('pod-a');
    const b = await make('pod-b');
    const a2 = await make('pod-a2');
    const of = async (uid: string) => ({
      sandboxes: (await runtime.listPodSandbox({ filter: { labelSelector: { [uidLabel]: uid } } })).items.map(
        (x) => x.id,
      ),
      containers: (
        await runtime.listContainers({ filter: { labelSelector: { [uidLabel]: uid } } })
      ).containers.map((x) => x.id),
    });
    expect(await of('pod-a')).toEqual({ sandboxes: [a.podSandboxId], containers: [a.containerId] });
    expect(await of('pod-b')).toEqual({ sandboxes: [b.podSandboxId], containers: [b.containerId] });
    // A selector with the UID and another label must match both.
    const both = await runtime.listContainers({
      filter: { labelSelector: { [uidLabel]: 'pod-a2', container: 'c' } },
    });
    expect(both.containers.map((x) => x.id)).toEqual([a2.containerId]);
    const none = await runtime.listContainers({
      filter: { labelSelector: { [uidLabel]: 'pod-a2', container: 'x' } },
    });
    expect(none.containers).toEqual([]);

    // Stopping the sandbox stops its container only.
    await runtime.stopPodSandbox({ podSandboxId: a.podSandboxId });
    const running = await runtime.listContainers({
      filter: { state: { state: ContainerState.CONTAINER_RUNNING } },
    });
    expect(running.containers.map((x) => x.id).sort()).toEqual([b.containerId, a2.containerId].sort());

    // Removal takes the pod's sandbox and container out of the filtered lists.
    await runtime.removePodSandbox({ podSandboxId: a.podSandboxId });
    expect(await of('pod-a')).toEqual({ sandboxes: [], containers: [] });
    expect(await of('pod-b')).toEqual({ sandboxes: [b.podSandboxId], containers: [b.containerId] });
    expect(await of('nobody')).toEqual({ sandboxes: [], containers: [] });
  });

  test('UpdateContainerResources and ReopenContainerLog', async () => {
    const { server, runtime } = await harness();
    const { containerId } = await runningContainer(runtime);
    await runtime.updateContainerResources({
      containerId,
      linux: { cpuShares: 512, memoryLimitInBytes: 2 ** 40 },
    });
    expect(server.calls('UpdateContainerResources')[0]?.request).toMatchObject({
      linux: { cpuShares: 512, memoryLimitInBytes: 2 ** 40 },
    });
    await runtime.reopenContainerLog({ containerId });
    server.exitContainer(containerId, 0);
    await expect(runtime.reopenContainerLog({ containerId })).rejects.toBeInstanceOf(CriError);
  });

  test('env values with non-ASCII text survive the bytes encoding', async () => {
    const { server, runtime } = await harness();
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('p') });
    const envs = [
      { key: 'GREETING', value: 'grüße, 世界 ✓ 🚀' },
      { key: 'EMPTY', value: '' },
      { key: 'BASE64ISH', value: 'aGVsbG8=' },
    ];
    await runtime.createContainer({ podSandboxId, config: containerConfig('c', { envs }) });
    const seen = server.calls<CreateContainerRequest>('CreateContainer')[0]?.request.config?.envs;
    expect(seen).toEqual(envs);
  });

  test('termination message and log helpers write where the kubelet reads', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-cri-test-'));
    try {
      const { server, runtime } = await harness();
      const { podSandboxId } = await runtime.runPodSandbox({
        config: sandboxConfig('p', { logDirectory: path.join(dir, 'logs') }),
      });
      const { containerId } = await runtime.createContainer({
        podSandboxId,
        config: containerConfig('c', {
          logPath: 'c/0.log',
          annotations: { 'io.kubernetes.container.terminationMessagePath': '/dev/termination-log' },
          mounts: [{ containerPath: '/dev/termination-log', hostPath: path.join(dir, 'term') }],
        }),
      });
      await runtime.startContainer({ containerId });
      const logPath = server.writeLog(containerId, 'stdout', 'hello\nworld\n');
      expect(fs.readFileSync(logPath, 'utf8')).toMatch(/^\S+ stdout F hello\n\S+ stdout F world\n$/);
      expect(server.setTerminationMessage(containerId, 'bye')).toBe(path.join(dir, 'term'));
      expect(fs.readFileSync(path.join(dir, 'term'), 'utf8')).toBe('bye');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('timestamps come from the injected clock', async () => {
    let now = 1_700_000_000_000;
    const { runtime } = await harness({ clock: { now: () => now } });
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('p') });
    const { containerId } = await runtime.createContainer({ podSandboxId, config: containerConfig('c') });
    now += 5000;
    await runtime.startContainer({ containerId });
    const s = (await runtime.containerStatus({ containerId })).status;
    expect(s?.createdAt).toBe(1_700_000_000_000 * 1e6);
    expect(s?.startedAt).toBe(1_700_000_005_000 * 1e6);
  });
});

describe('ExecSync', () => {
  test('answered by registered handlers', async () => {
    const { server, runtime } = await harness();
    const { containerId } = await runningContainer(runtime);
    server.onExec('cat /tmp/ready', () => ({ stdout: 'ok\n' }));
    server.onExec(/^sh -c/, (call) => ({ stderr: `no ${call.cmd[2]}`, exitCode: 3 }));
    const off = server.onExec(
      (call) => call.cmd[0] === 'id',
      () => ({ stdout: new Uint8Array([0xff, 0x00]), exitCode: 0 }),
    );

    const ready = await runtime.execSync({ containerId, cmd: ['cat', '/tmp/ready'], timeout: 1 });
    expect(Buffer.from(ready.stdout).toString()).toBe('ok\n');
    expect(ready.exitCode).toBe(0);
    const failed = await runtime.execSync({ containerId, cmd: ['sh', '-c', 'boom'] });
    expect(failed.exitCode).toBe(3);
    expect(Buffer.from(failed.stderr).toString()).toBe('no boom');
    expect([...(await runtime.execSync({ containerId, cmd: ['id'] })).stdout]).toEqual([0xff, 0x00]);
    off();
    const unmatched = await runtime.execSync({ containerId, cmd: ['id'] });
    expect(unmatched.exitCode).toBe(0);
    expect(unmatched.stdout).toHaveLength(0);
    expect(server.calls('ExecSync').map((c) => (c.request as { cmd: string[] }).cmd[0])).toEqual([
      'cat',
      'sh',
      'id',
      'id',
    ]);
  });

  test('a slow command trips its timeout with DeadlineExceeded', async () => {
    const { server, runtime } = await harness();
    const { containerId } = await runningContainer(runtime);
    server.onExec('sleep', () => new Promise((resolve) => setTimeout(() => resolve({}), 3000)));
    await expect(runtime.execSync({ containerId, cmd: ['sleep'], timeout: 1 })).rejects.toMatchObject({
      code: 'DeadlineExceeded',
      details: expect.stringContaining('timeout 1s exceeded'),
    });
  });

  test('fails on a container that is not running', async () => {
    const { server, runtime } = await harness();
    const { containerId } = await runningContainer(runtime);
    server.exitContainer(containerId, 1);
    await expect(runtime.execSync({ containerId, cmd: ['true'] })).rejects.toMatchObject({
      code: 'Unknown',
      details: 'failed to exec in container: container is in CONTAINER_EXITED state',
    });
    await expect(runtime.execSync({ containerId: 'gone', cmd: ['true'] })).rejects.toMatchObject({
      code: 'NotFound',
    });
  });
});
