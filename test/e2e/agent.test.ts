// End to end: `kubelet-kit run` on the private containerd, with static pods from a directory.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/agent.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { ContainerState } from '@kubelet-kit/cri';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  isRunningWithIP,
  podNamed,
  removeNodePods,
  runtimeState,
  startAgent,
  waitFor,
} from './support/agent-process.js';

const nodeName = `e2e-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;

function manifest(name: string, containers: Array<{ name: string; command: string }>, extra = ''): string {
  const list = containers
    .map(
      (c) =>
        `  - name: ${c.name}\n    image: ${busybox}\n    command: ["sh", "-c", ${JSON.stringify(c.command)}]`,
    )
    .join('\n');
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  terminationGracePeriodSeconds: 3\n${extra}  containers:\n${list}\n`;
}

const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";

describe('kubelet-kit run on containerd', () => {
  let dir: string;
  let manifests: string;
  let root: string;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-e2e-'));
    manifests = path.join(dir, 'manifests');
    root = path.join(dir, 'root');
    fs.mkdirSync(manifests);
    fs.writeFileSync(
      path.join(manifests, 'alpha.yaml'),
      manifest('alpha', [
        { name: 'one', command: sleeper },
        { name: 'two', command: sleeper },
      ]),
    );
    fs.writeFileSync(
      path.join(manifests, 'beta.yaml'),
      manifest('beta', [{ name: 'main', command: sleeper }]),
    );
    fs.writeFileSync(
      path.join(manifests, 'gamma.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'gamma' },
        spec: {
          terminationGracePeriodSeconds: 3,
          containers: [{ name: 'main', image: busybox, command: ['sh', '-c', sleeper] }],
        },
      }),
    );
    // A broken manifest beside the good ones: a container without an image.
    fs.writeFileSync(
      path.join(manifests, 'broken.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n  containers:\n  - name: noimage\n',
    );
    fs.writeFileSync(
      path.join(manifests, '.hidden.yaml'),
      manifest('hidden', [{ name: 'main', command: sleeper }]),
    );
    agent = await startAgent({ nodeName, manifestDir: manifests, rootDir: root });
  });

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs every valid manifest with a pod IP, and reports the broken one with file and field', async () => {
    const pods = await waitFor('three pods Running with IPs', async () => {
      const pods = await agent!.pods();
      const names = ['alpha', 'beta', 'gamma'].map(podName);
      return names.every((n) => isRunningWithIP(podNamed(pods, n))) ? pods : undefined;
    });
    expect(pods.map((p) => p.metadata?.name).sort()).toEqual(['alpha', 'beta', 'gamma'].map(podName).sort());
    const alpha = podNamed(pods, podName('alpha'))!;
    expect(alpha.status?.containerStatuses?.map((c) => [c.name, c.ready, c.restartCount])).toEqual([
      ['one', true, 0],
      ['two', true, 0],
    ]);
    expect(alpha.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(alpha.metadata?.annotations?.['kubernetes.io/config.source']).toBe('file');
    const ips = new Set(pods.map((p) => p.status?.podIP));
    expect(ips.size).toBe(3);
    const rejection = agent!.logs.find((l) => typeof l.err === 'string' && l.err.includes('broken.yaml'));
    expect(rejection?.err).toMatch(/broken\.yaml/);
    expect(rejection?.err).toMatch(/spec\.containers\[0\]\.image/);
  });

  it('replaces the pod whose manifest changed and leaves the others untouched', async () => {
    const before = await runtimeState(nodeName);
    const idsOf = (pod: string) =>
      before.containers
        .filter((c) => c.labels['io.kubernetes.pod.name'] === podName(pod))
        .map((c) => c.id)
        .sort();
    const betaBefore = idsOf('beta');
    const gammaBefore = idsOf('gamma');
    const alphaBefore = idsOf('alpha');
    expect(alphaBefore).toHaveLength(2);

    fs.writeFileSync(
      path.join(manifests, 'alpha.yaml'),
      manifest('alpha', [
        { name: 'one', command: `echo edited; ${sleeper}` },
        { name: 'two', command: sleeper },
      ]),
    );
    const oldUid = podNamed(await agent!.pods(), podName('alpha'))!.metadata!.uid;
    const alpha = await waitFor('the edited alpha running', async () => {
      const p = podNamed(await agent!.pods(), podName('alpha'));
      return p &&
        p.metadata?.uid !== oldUid &&
        isRunningWithIP(p) &&
        p.status?.containerStatuses?.every((c) => c.ready)
        ? p
        : undefined;
    });
    expect(alpha.spec?.containers[0]?.command?.[2]).toContain('echo edited');

    const after = await waitFor('the old alpha gone from the runtime', async () => {
      const s = await runtimeState(nodeName);
      const running = s.containers.filter(
        (c) => c.labels['io.kubernetes.pod.name'] === podName('alpha') && c.state === 1,
      );
      return running.length === 2 && running.every((c) => !alphaBefore.includes(c.id)) ? s : undefined;
    });
    const idsAfter = (pod: string) =>
      after.containers
        .filter((c) => c.labels['io.kubernetes.pod.name'] === podName(pod))
        .map((c) => c.id)
        .sort();
    expect(idsAfter('beta')).toEqual(betaBefore);
    expect(idsAfter('gamma')).toEqual(gammaBefore);
  });

  it('terminates a deleted manifest gracefully and removes its sandbox', async () => {
    fs.rmSync(path.join(manifests, 'gamma.json'));
    await waitFor('gamma gone from /pods', async () =>
      podNamed(await agent!.pods(), podName('gamma')) ? undefined : true,
    );
    const killing = agent!.logs.filter(
      (l) => l.event === 'Killing' && String(l.object).includes(podName('gamma')),
    );
    expect(killing.length).toBeGreaterThan(0);
    await waitFor(
      'gamma sandbox removed',
      async () => {
        const s = await runtimeState(nodeName);
        return s.sandboxes.some((x) => x.metadata?.name === podName('gamma')) ? undefined : true;
      },
      90_000,
    );
    const pods = await agent!.pods();
    expect(podNamed(pods, podName('beta'))?.status?.phase).toBe('Running');
  });

  it('adopts running pods after SIGKILL: nothing restarted, no duplicate sandbox', async () => {
    const before = await runtimeState(nodeName);
    const statusBefore = await agent!.pods();
    await agent!.kill();
    agent = await startAgent({ nodeName, manifestDir: manifests, rootDir: root });
    const pods = await waitFor('pods back in /pods and Ready', async () => {
      const pods = await agent!.pods();
      const ready = (p: Pod | undefined) =>
        p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      return ['alpha', 'beta'].every((n) => ready(podNamed(pods, podName(n)))) ? pods : undefined;
    });
    // Let a few sync and housekeeping rounds pass before comparing.
    await new Promise((r) => setTimeout(r, 5000));
    const after = await runtimeState(nodeName);
    const ready = (s: typeof before) =>
      s.sandboxes
        .filter((x) => x.state === 0)
        .map((x) => x.id)
        .sort();
    expect(ready(after)).toEqual(ready(before));
    expect(ready(after)).toHaveLength(2);
    expect(
      after.containers
        .filter((c) => c.state === 1)
        .map((c) => c.id)
        .sort(),
    ).toEqual(
      before.containers
        .filter((c) => c.state === 1)
        .map((c) => c.id)
        .sort(),
    );
    for (const name of ['alpha', 'beta']) {
      const was = podNamed(statusBefore, podName(name))!;
      const now = podNamed(pods, podName(name))!;
      expect(now.metadata?.uid).toBe(was.metadata?.uid);
      expect(now.status?.podIP).toBe(was.status?.podIP);
      expect(
        now.status?.containerStatuses?.map((c) => [c.name, c.restartCount, c.ready, c.containerID]),
      ).toEqual(was.status?.containerStatuses?.map((c) => [c.name, c.restartCount, c.ready, c.containerID]));
    }
  });
});

describe('kubelet-kit run on containerd: activeDeadlineSeconds', () => {
  const deadlineNode = `e2e-${randomBytes(3).toString('hex')}`;
  let dir: string;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-e2e-deadline-'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    fs.writeFileSync(
      path.join(manifests, 'job.yaml'),
      manifest('job', [{ name: 'main', command: sleeper }], '  activeDeadlineSeconds: 6\n'),
    );
    agent = await startAgent({
      nodeName: deadlineNode,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
    });
  });

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(deadlineNode);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('fails the pod with DeadlineExceeded once it has run that long, and stops its container', async () => {
    const name = `job-${deadlineNode}`;
    const running = await waitFor('job Running', async () => {
      const pod = podNamed(await agent!.pods(), name);
      return pod?.status?.phase === 'Running' ? pod : undefined;
    });
    const startedAt = Date.parse(running.status?.startTime ?? '');
    const failed = await waitFor('job Failed', async () => {
      const pod = podNamed(await agent!.pods(), name);
      return pod?.status?.phase === 'Failed' ? pod : undefined;
    });
    // Not before the deadline (start times are whole seconds).
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(6_000);
    expect(failed.status?.reason).toBe('DeadlineExceeded');
    expect(failed.status?.message).toBe('Pod was active on the node longer than the specified deadline');
    await waitFor('job container stopped', async () => {
      const { containers } = await runtimeState(deadlineNode);
      return containers.length > 0 && containers.every((c) => c.state !== ContainerState.CONTAINER_RUNNING)
        ? true
        : undefined;
    });
    expect(agent!.logs.some((l) => l.event === 'DeadlineExceeded')).toBe(true);
  });
});
