// End to end: a containerd restart at any moment loses no pod (kubelet-kit issue #23).
// The test starts a containerd of its own (it restarts it, so never the shared one):
//   npm run build && npx vitest run --project e2e test/e2e/runtime-restart.test.ts
// (as root; the shared instance need not be up.) 20 static pods of two containers are written
// into the agent's manifest folder at once; containerd is stopped (SIGTERM) a moment later and
// started again 2 s after that. Then every pod must run, with exactly one ready sandbox, exactly
// its two containers and nothing else in the runtime, and containers that ran before the
// restart must still be the same ones (restart count 0).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { ContainerState, PodSandboxState, RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, busybox, startAgent } from './support/agent-process.js';
import { type PrivateContainerd, startPrivateContainerd } from './support/private-containerd.js';

const podCount = 20;
const containerNames = ['main', 'side'];
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";
const settleTimeoutMs = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function manifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: containerNames.map((c) => ({
        name: c,
        image: busybox,
        imagePullPolicy: 'Never',
        command: ['sh', '-c', sleeper],
      })),
    },
  });
}

interface RuntimeView {
  readonly sandboxes: Awaited<ReturnType<RuntimeServiceClient['listPodSandbox']>>['items'];
  readonly containers: Awaited<ReturnType<RuntimeServiceClient['listContainers']>>['containers'];
}

/** Everything the runtime holds, with the pod (by its sandbox) of each container. */
async function runtimeView(runtime: RuntimeServiceClient): Promise<RuntimeView> {
  const [sandboxes, containers] = await Promise.all([runtime.listPodSandbox({}), runtime.listContainers({})]);
  return { sandboxes: sandboxes.items, containers: containers.containers };
}

/** What is wrong with the node's pods right now; empty once the node is as it should be. */
function problems(nodeName: string, pods: readonly Pod[], view: RuntimeView): string[] {
  const out: string[] = [];
  const names = Array.from({ length: podCount }, (_, i) => `p${String(i).padStart(2, '0')}-${nodeName}`);
  for (const name of names) {
    const pod = pods.find((p) => p.metadata?.name === name);
    if (!pod) {
      out.push(`${name}: not known to the agent`);
      continue;
    }
    const statuses = pod.status?.containerStatuses ?? [];
    if (
      pod.status?.phase !== 'Running' ||
      statuses.length !== containerNames.length ||
      !statuses.every((c) => c.ready)
    ) {
      const states = statuses.map(
        (c) => `${c.name}=${Object.keys(c.state ?? {})[0]}${c.ready ? '/ready' : ''}`,
      );
      out.push(`${name}: phase ${pod.status?.phase}, containers ${states.join(' ') || 'none'}`);
    }
  }
  // The runtime holds exactly one sandbox per pod, ready, with its two containers running.
  const byId = new Map(view.sandboxes.map((s) => [s.id, s]));
  for (const name of names) {
    const sandboxes = view.sandboxes.filter((s) => s.metadata?.name === name);
    const ready = sandboxes.filter((s) => s.state === PodSandboxState.SANDBOX_READY);
    if (ready.length !== 1 || sandboxes.length !== 1) {
      out.push(`${name}: ${ready.length} ready of ${sandboxes.length} sandboxes`);
      continue;
    }
    const sandbox = ready[0];
    const inside = view.containers.filter((c) => c.podSandboxId === sandbox?.id);
    const running = inside.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
    const want = [...containerNames].sort().join(',');
    const got = running
      .map((c) => c.metadata?.name ?? '?')
      .sort()
      .join(',');
    // Beside them, at most one exited instance per container: one whose start the outage cut
    // (exit 128/255), which GC keeps as the container's last dead instance, as upstream.
    const dead = inside.filter((c) => c.state !== ContainerState.CONTAINER_RUNNING);
    const deadNames = dead.map((c) => c.metadata?.name ?? '?');
    const deadOk =
      dead.every((c) => c.state === ContainerState.CONTAINER_EXITED) &&
      new Set(deadNames).size === deadNames.length &&
      deadNames.every((n) => containerNames.includes(n));
    if (got !== want || !deadOk) {
      const all = inside.map((c) => `${c.metadata?.name}:${c.state}`).sort();
      out.push(`${name}: sandbox ${sandbox?.id.slice(0, 12)} holds [${all.join(',')}]`);
    }
    // A container in this pod's sandbox must be this pod's (the pod UID label says whose).
    for (const c of inside) {
      if (c.labels['io.kubernetes.pod.uid'] !== sandbox?.metadata?.uid) {
        out.push(
          `${name}: stray container ${c.metadata?.name} of pod ${c.labels['io.kubernetes.pod.name']} in its sandbox`,
        );
      }
    }
  }
  for (const c of view.containers) {
    if (!byId.has(c.podSandboxId))
      out.push(`container ${c.id.slice(0, 12)} (${c.metadata?.name}) has no sandbox`);
  }
  const extra = view.sandboxes.filter((s) => !names.includes(s.metadata?.name ?? ''));
  for (const s of extra) out.push(`sandbox ${s.id.slice(0, 12)} of unknown pod ${s.metadata?.name}`);
  return out;
}

describe('a containerd restart while pods start', () => {
  let containerd: PrivateContainerd;
  let runtime: RuntimeServiceClient;

  beforeAll(async () => {
    containerd = await startPrivateContainerd({
      name: 'restart-e2e',
      bridge: 'kkitrst',
      podSubnet: '10.246.0.0/16',
    });
    runtime = new RuntimeServiceClient({ endpoint: containerd.endpoint, timeoutMs: 20_000 });
  }, 170_000);

  afterAll(async () => {
    runtime?.close();
    await containerd?.destroy();
  }, 120_000);

  async function removeEverything(): Promise<void> {
    const view = await runtimeView(runtime);
    for (const s of view.sandboxes) {
      await runtime.stopPodSandbox({ podSandboxId: s.id }).catch(() => {});
      await runtime.removePodSandbox({ podSandboxId: s.id }).catch(() => {});
    }
  }

  it.each([
    { when: 'while its pods are being created (1.5 s)', stopAfterMs: 1_500 },
    { when: 'once its pods run (5 s)', stopAfterMs: 5_000 },
  ])('loses no pod when containerd restarts $when', async ({ stopAfterMs }) => {
    const nodeName = `rs-${randomBytes(3).toString('hex')}`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kkit-restart-'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    let agent: AgentProcess | undefined;
    let ok = false;
    try {
      agent = await startAgent({
        nodeName,
        manifestDir: manifests,
        rootDir: path.join(dir, 'root'),
        endpoint: containerd.endpoint,
      });
      for (let i = 0; i < podCount; i++) {
        const name = `p${String(i).padStart(2, '0')}`;
        fs.writeFileSync(path.join(manifests, `${name}.json`), manifest(name));
      }
      const written = Date.now();

      // The containers running just before the stop must survive it.
      await sleep(Math.max(0, written + stopAfterMs - 150 - Date.now()));
      const before = (await runtimeView(runtime)).containers.filter(
        (c) => c.state === ContainerState.CONTAINER_RUNNING,
      );
      await sleep(Math.max(0, written + stopAfterMs - Date.now()));
      await containerd.stop();
      await sleep(Math.max(0, written + stopAfterMs + 2_000 - Date.now()));
      await containerd.start();
      const restartedAt = Date.now();

      let last: string[] = [];
      let pods: Pod[] = [];
      let view: RuntimeView | undefined;
      const deadline = restartedAt + settleTimeoutMs;
      for (;;) {
        try {
          [pods, view] = await Promise.all([agent.pods(), runtimeView(runtime)]);
          last = problems(nodeName, pods, view);
        } catch (err) {
          last = [`cannot read state: ${String(err)}`];
        }
        if (last.length === 0 || Date.now() > deadline) break;
        await sleep(500);
      }
      expect(
        last,
        `still wrong ${Math.round((Date.now() - restartedAt) / 1000)} s after the restart`,
      ).toEqual([]);
      console.log(
        `restart ${stopAfterMs} ms after the manifests: settled ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after containerd came back; ${before.length} containers ran before`,
      );

      // Nothing that ran was restarted: same container IDs, still running, restart count 0.
      const now = new Map((view as RuntimeView).containers.map((c) => [c.id, c]));
      for (const c of before) {
        expect(
          now.get(c.id)?.state,
          `${c.labels['io.kubernetes.pod.name']}/${c.metadata?.name} ${c.id.slice(0, 12)}`,
        ).toBe(ContainerState.CONTAINER_RUNNING);
      }
      // A container that ran before the stop counts no restart; one whose start the outage cut
      // counts one, as upstream.
      const ranBefore = new Set(
        before.map((c) => `${c.labels['io.kubernetes.pod.name']}/${c.metadata?.name}`),
      );
      for (const pod of pods.filter((p) => p.metadata?.name?.endsWith(`-${nodeName}`))) {
        for (const s of pod.status?.containerStatuses ?? []) {
          const key = `${pod.metadata?.name}/${s.name}`;
          expect(s.restartCount, key).toBeLessThanOrEqual(ranBefore.has(key) ? 0 : 1);
        }
      }
      ok = true;
    } finally {
      if (agent) {
        const logFile = path.join(dir, 'agent.log');
        fs.writeFileSync(logFile, agent.logs.map((l) => JSON.stringify(l)).join('\n'));
        if (!ok) console.log(`agent log: ${logFile}\ncontainerd log tail:\n${containerd.logTail(30)}`);
        await agent.kill();
      }
      await removeEverything();
      if (ok) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
