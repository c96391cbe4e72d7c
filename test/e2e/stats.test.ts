// End to end: the summary API and its siblings through `kubelet-kit run` on a containerd.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/stats.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import type { PodStats, Summary } from '@kubelet-kit/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  criEndpoint,
  podNamed,
  removeNodePods,
  startAgent,
  waitFor,
} from './support/agent-process.js';

const nodeName = `stats-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
// A little work each second, so CPU counters move without burning a shared core.
const worker =
  "trap 'exit 0' TERM; while true; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 1; done";

function podManifest(name: string, volumes: unknown[] = [], mounts: unknown[] = []) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'main',
          image: busybox,
          imagePullPolicy: 'Never',
          command: ['sh', '-c', worker],
          volumeMounts: mounts,
        },
      ],
      volumes,
    },
  };
}

describe('the summary API through the agent on containerd', () => {
  let dir: string;
  let agent: AgentProcess | undefined;
  let runtime: RuntimeServiceClient;

  const summary = async (query = ''): Promise<Summary> => {
    const res = await fetch(`${agent!.baseUrl}/stats/summary${query}`);
    if (res.status !== 200) throw new Error(`/stats/summary${query}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Summary;
  };
  const ours = (s: Summary): PodStats[] => s.pods.filter((p) => p.podRef.name.endsWith(`-${nodeName}`));

  beforeAll(async () => {
    runtime = new RuntimeServiceClient({ endpoint: criEndpoint(), timeoutMs: 60_000 });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-stats-e2e-'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    const write = (name: string, value: unknown) =>
      fs.writeFileSync(path.join(manifests, `${name}.json`), JSON.stringify(value));
    write(
      'alpha',
      podManifest('alpha', [{ name: 'scratch', emptyDir: {} }], [{ name: 'scratch', mountPath: '/scratch' }]),
    );
    write('beta', podManifest('beta'));
    write('gamma', podManifest('gamma'));
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: ['--max-pods', '50', '--sync-frequency', '3s'],
    });
    await waitFor(
      'three pods Running',
      async () => {
        const pods = await agent!.pods();
        return ['alpha', 'beta', 'gamma'].every(
          (n) => podNamed(pods, podName(n))?.status?.phase === 'Running',
        )
          ? pods
          : undefined;
      },
      120_000,
    );
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    runtime?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lists the pods with cpu and memory after two samples, and fills the node section', async () => {
    await summary();
    await new Promise((r) => setTimeout(r, 2500));
    const s = await waitFor('usageNanoCores on every pod', async () => {
      const s = await summary();
      const pods = ours(s);
      return pods.length === 3 && pods.every((p) => (p.cpu?.usageNanoCores ?? 0) > 0) ? s : undefined;
    });
    const pods = ours(s);
    expect(pods.map((p) => p.podRef.name).sort()).toEqual(['alpha', 'beta', 'gamma'].map(podName));
    for (const p of pods) {
      expect(p.podRef.namespace).toBe('default');
      expect(p.memory?.workingSetBytes ?? 0).toBeGreaterThan(0);
      const main = p.containers.find((c) => c.name === 'main');
      expect(main?.cpu?.usageCoreNanoSeconds ?? 0).toBeGreaterThan(0);
      expect(main?.memory?.workingSetBytes ?? 0).toBeGreaterThan(0);
      expect(main?.logs).toBeDefined();
      expect(p['ephemeral-storage']).toBeDefined();
    }
    const n = s.node;
    expect(n.nodeName).toBe(nodeName);
    expect(n.cpu?.usageNanoCores ?? 0).toBeGreaterThan(0);
    expect(n.memory?.workingSetBytes ?? 0).toBeGreaterThan(0);
    expect(n.fs?.capacityBytes ?? 0).toBeGreaterThan(0);
    expect(n.runtime?.imageFs?.usedBytes ?? 0).toBeGreaterThan(0);
    expect(n.rlimit?.maxpid ?? 0).toBeGreaterThan(0);
    expect(n.systemContainers?.map((c) => c.name)).toEqual(['kubelet', 'pods']);
  });

  it("grows an emptyDir volume's usedBytes after 5 MiB are written to it", async () => {
    const before = ours(await summary()).find((p) => p.podRef.name === podName('alpha'));
    const scratch = before?.volume?.find((v) => v.name === 'scratch');
    expect(scratch).toBeDefined();
    const c = (await runtime.listContainers({})).containers.find(
      (x) => x.labels['io.kubernetes.pod.name'] === podName('alpha') && x.state === 1,
    );
    const res = await runtime.execSync({
      containerId: c?.id ?? '',
      cmd: ['dd', 'if=/dev/zero', 'of=/scratch/blob', 'bs=1048576', 'count=5'],
      timeout: 30,
    });
    expect(res.exitCode).toBe(0);
    const after = ours(await summary()).find((p) => p.podRef.name === podName('alpha'));
    const grown =
      (after?.volume?.find((v) => v.name === 'scratch')?.usedBytes ?? 0) - (scratch?.usedBytes ?? 0);
    expect(grown).toBeGreaterThanOrEqual(5 * 1024 * 1024);
  });

  it('serves only_cpu_and_memory, /metrics/resource, /runningpods/ and /configz', async () => {
    const only = await summary('?only_cpu_and_memory=true');
    expect(only.node.fs).toBeUndefined();
    expect(ours(only)).toHaveLength(3);

    const text = await (await fetch(`${agent!.baseUrl}/metrics/resource`)).text();
    for (const n of ['alpha', 'beta', 'gamma']) {
      expect(text).toMatch(
        new RegExp(
          `container_cpu_usage_seconds_total\\{container="main",namespace="default",pod="${podName(n)}"\\} \\S+ \\d+\\n`,
        ),
      );
      expect(text).toMatch(
        new RegExp(
          `container_memory_working_set_bytes\\{container="main",namespace="default",pod="${podName(n)}"\\}`,
        ),
      );
      expect(text).toMatch(
        new RegExp(`pod_cpu_usage_seconds_total\\{namespace="default",pod="${podName(n)}"\\}`),
      );
    }
    expect(text).toMatch(/node_cpu_usage_seconds_total \S+ \d+\n/);
    expect(text).toContain('resource_scrape_error 0\n');

    const running = (await (await fetch(`${agent!.baseUrl}/runningpods/`)).json()) as {
      kind: string;
      items: Array<{
        metadata: { name: string };
        spec: { containers: Array<{ name: string; image: string }> };
      }>;
    };
    expect(running.kind).toBe('PodList');
    const names = running.items.map((p) => p.metadata.name).filter((n) => n.endsWith(`-${nodeName}`));
    expect(names.sort()).toEqual(['alpha', 'beta', 'gamma'].map(podName));
    expect(running.items.find((p) => p.metadata.name === podName('beta'))?.spec.containers[0]?.name).toBe(
      'main',
    );

    const configz = (await (await fetch(`${agent!.baseUrl}/configz`)).json()) as {
      kubeletconfig: Record<string, unknown>;
    };
    expect(configz.kubeletconfig).toMatchObject({
      maxPods: 50,
      syncFrequency: '3s',
      fileCheckFrequency: '2s',
    });
    expect(configz.kubeletconfig.containerRuntimeEndpoint).toBe(criEndpoint());

    const probes = await fetch(`${agent!.baseUrl}/metrics/probes`);
    expect(probes.status).toBe(200);
  });
});
