// End to end: the CRI client alone against the private containerd of scripts/containerd.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh
//   npx vitest run --project e2e test/e2e/cri-client.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ContainerState,
  CriError,
  ImageServiceClient,
  NamespaceMode,
  PodSandboxState,
  RuntimeServiceClient,
} from '@kubelet-kit/cri';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
const BUSYBOX = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';
const PAUSE = process.env.KUBELET_KIT_PAUSE_IMAGE ?? 'localhost/kubelet-kit/pause:1.0';
const runId = `cri-e2e-${randomBytes(4).toString('hex')}`;
// Every object this test creates carries this label, so it finds (and removes) only its own
// objects even when other tests share the runtime.
const labels = { 'kubelet-kit.io/e2e': runId };

describe('CRI client against containerd', () => {
  let runtime: RuntimeServiceClient;
  let image: ImageServiceClient;
  let logDir: string;

  beforeAll(() => {
    if (!endpoint) {
      throw new Error(
        'KUBELET_KIT_CRI_ENDPOINT is not set. Start the private containerd first: ' +
          'source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
      );
    }
    runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 60_000 });
    image = new ImageServiceClient({ endpoint, timeoutMs: 60_000 });
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-cri-e2e-logs-'));
  });

  afterAll(async () => {
    if (!runtime) return;
    // Best effort: leave nothing behind even when a step failed half way.
    try {
      for (const c of (await runtime.listContainers({ filter: { labelSelector: labels } })).containers) {
        await runtime.removeContainer({ containerId: c.id }).catch(() => {});
      }
      for (const s of (await runtime.listPodSandbox({ filter: { labelSelector: labels } })).items) {
        await runtime.stopPodSandbox({ podSandboxId: s.id }).catch(() => {});
        await runtime.removePodSandbox({ podSandboxId: s.id }).catch(() => {});
      }
    } finally {
      runtime.close();
      image.close();
      fs.rmSync(logDir, { recursive: true, force: true });
    }
  });

  test('runs a busybox pod: sandbox with an IP, container, exec, logs, clean removal', async () => {
    const version = await runtime.version({ version: 'v1' });
    console.log(
      `CRI runtime: ${version.runtimeName} ${version.runtimeVersion} (CRI ${version.runtimeApiVersion}) at ${endpoint}`,
    );
    expect(version.runtimeName).toBe('containerd');
    expect(version.runtimeApiVersion).toBe('v1');

    const conditions = (await runtime.status()).status?.conditions ?? [];
    expect(conditions.filter((c) => c.status).map((c) => c.type)).toEqual(
      expect.arrayContaining(['RuntimeReady', 'NetworkReady']),
    );
    for (const ref of [BUSYBOX, PAUSE]) {
      const status = await image.imageStatus({ image: { image: ref } });
      expect(status.image?.repoTags, `${ref} must be imported (scripts/containerd/up.sh)`).toContain(ref);
    }

    const sandboxConfig = {
      metadata: { name: 'hello', namespace: 'kubelet-kit-e2e', uid: runId, attempt: 0 },
      hostname: 'hello',
      logDirectory: logDir,
      labels,
      linux: {
        securityContext: {
          namespaceOptions: {
            network: NamespaceMode.POD,
            pid: NamespaceMode.CONTAINER,
            ipc: NamespaceMode.POD,
          },
        },
      },
    };
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig });
    const sandbox = (await runtime.podSandboxStatus({ podSandboxId })).status;
    expect(sandbox?.state).toBe(PodSandboxState.SANDBOX_READY);
    expect(sandbox?.network?.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    console.log(`sandbox ${podSandboxId.slice(0, 12)} ip ${sandbox?.network?.ip}`);

    const { containerId } = await runtime.createContainer({
      podSandboxId,
      config: {
        metadata: { name: 'busybox', attempt: 0 },
        image: { image: BUSYBOX },
        command: ['sh', '-c', 'echo hello; sleep 3600'],
        envs: [{ key: 'GREETING', value: 'grüße, 世界 ✓' }],
        logPath: 'busybox/0.log',
        labels,
      },
      sandboxConfig,
    });
    await runtime.startContainer({ containerId });
    const running = (await runtime.containerStatus({ containerId })).status;
    expect(running?.state).toBe(ContainerState.CONTAINER_RUNNING);
    expect(running?.startedAt).toBeGreaterThan(0);
    expect(running?.logPath).toBe(path.join(logDir, 'busybox/0.log'));

    // The env value went over the wire as UTF-8 bytes and reached the process intact.
    const exec = await runtime.execSync({
      containerId,
      cmd: ['sh', '-c', 'echo "$GREETING"; hostname'],
      timeout: 10,
    });
    expect(exec.exitCode).toBe(0);
    expect(Buffer.from(exec.stdout).toString('utf8')).toBe('grüße, 世界 ✓\nhello\n');
    const failing = await runtime.execSync({
      containerId,
      cmd: ['sh', '-c', 'echo oops >&2; exit 3'],
      timeout: 10,
    });
    expect(failing.exitCode).toBe(3);
    expect(Buffer.from(failing.stderr).toString('utf8')).toBe('oops\n');

    // CRI log format: `<RFC3339Nano time> <stream> <P|F> <text>`.
    const logPath = path.join(logDir, 'busybox/0.log');
    await expect
      .poll(() => (fs.existsSync(logPath) ? fs.readFileSync(logPath, 'utf8') : ''), { timeout: 10_000 })
      .toMatch(/^\d{4}-\d\d-\d\dT\S+ stdout F hello$/m);

    await runtime.stopContainer({ containerId, timeout: 2 });
    const exited = (await runtime.containerStatus({ containerId })).status;
    expect(exited?.state).toBe(ContainerState.CONTAINER_EXITED);
    expect(exited?.finishedAt).toBeGreaterThanOrEqual(exited?.startedAt ?? 0);
    console.log(`container exited with ${exited?.exitCode} (${exited?.reason})`);

    await runtime.removeContainer({ containerId });
    await runtime.stopPodSandbox({ podSandboxId });
    await runtime.removePodSandbox({ podSandboxId });

    expect((await runtime.listContainers({ filter: { labelSelector: labels } })).containers).toEqual([]);
    expect((await runtime.listPodSandbox({ filter: { labelSelector: labels } })).items).toEqual([]);
    await expect(runtime.containerStatus({ containerId })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(runtime.podSandboxStatus({ podSandboxId })).rejects.toMatchObject({ code: 'NotFound' });
  });

  test('errors are typed: unknown container, missing image, GetContainerEvents on containerd 1.6', async () => {
    await expect(runtime.containerStatus({ containerId: 'does-not-exist' })).rejects.toMatchObject({
      code: 'NotFound',
    });
    await expect(
      image.pullImage({ image: { image: 'localhost/kubelet-kit/absent:0' } }),
    ).rejects.toBeInstanceOf(CriError);

    const version = await runtime.version();
    const events = runtime.getContainerEvents({}, { signal: AbortSignal.timeout(5000) });
    const first = events[Symbol.asyncIterator]().next();
    if (version.runtimeVersion.startsWith('1.6')) {
      await expect(first).rejects.toMatchObject({ code: 'Unimplemented' });
    } else {
      // Newer runtimes stream; the watch ends quietly when the signal fires.
      await first.catch(() => {});
    }
  });
});
