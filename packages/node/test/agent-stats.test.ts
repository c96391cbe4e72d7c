import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeClock } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../src/agent.js';
import type { Summary } from '../src/stats/summary-types.js';
import { pump } from './pump.js';

// `kubelet-kit run`'s assembly serves the summary API: the agent on the in-memory CRI.
const image = 'localhost/kubelet-kit/busybox:1.0';

describe('agent stats endpoints', () => {
  let server: InMemoryCriServer;
  let dir: string;
  let clock: FakeClock;
  let agent: Agent | undefined;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    server = await InMemoryCriServer.start({ images: [image], clock });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-stats-'));
    fs.mkdirSync(path.join(dir, 'manifests'));
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves /stats/summary, /runningpods/ and /configz for its pods', async () => {
    fs.writeFileSync(
      path.join(dir, 'manifests', 'web.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web' },
        spec: {
          containers: [{ name: 'main', image, volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
          volumes: [{ name: 'scratch', emptyDir: {} }],
        },
      }),
    );
    agent = createAgent({
      runtimeEndpoint: server.endpoint,
      podManifestPath: path.join(dir, 'manifests'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      maxPods: 30,
      port: 0,
      clock,
    });
    await agent.start();
    const a = agent;
    await pump(clock, () =>
      a.kubelet
        .podsWithStatus()
        .find((p) => p.metadata?.name === 'web-node-a' && p.status?.phase === 'Running'),
    );
    const base = `http://127.0.0.1:${a.address?.port}`;

    const summary = (await (await fetch(`${base}/stats/summary`)).json()) as Summary;
    expect(summary.node.nodeName).toBe('node-a');
    const pod = summary.pods.find((p) => p.podRef.name === 'web-node-a');
    expect(pod?.containers.map((c) => c.name)).toEqual(['main']);
    expect(pod?.volume?.map((v) => v.name)).toEqual(['scratch']);

    const running = (await (await fetch(`${base}/runningpods/`)).json()) as {
      items: Array<{ metadata: { name: string } }>;
    };
    expect(running.items.map((p) => p.metadata.name)).toEqual(['web-node-a']);

    const configz = (await (await fetch(`${base}/configz`)).json()) as {
      kubeletconfig: Record<string, unknown>;
    };
    expect(configz.kubeletconfig).toMatchObject({ maxPods: 30, port: a.address?.port });

    expect(await (await fetch(`${base}/metrics/resource`)).text()).toContain(
      'container_cpu_usage_seconds_total{container="main",namespace="default",pod="web-node-a"} 0',
    );
  });
});
