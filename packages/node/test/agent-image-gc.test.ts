import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { ImageServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../src/agent.js';
import { pump } from './pump.js';

// The agent's image GC over the in-memory CRI: ImageFsInfo names a real directory, so usage and
// capacity come from statfs of it as on a node; thresholds that force collection.
const used = 'localhost/kubelet-kit/busybox:1.0';
const pause = 'registry.k8s.io/pause:3.10';
const unused = ['localhost/kubelet-kit/extra-a:1', 'localhost/kubelet-kit/extra-b:1'];

describe('agent image GC on the in-memory CRI', () => {
  let server: InMemoryCriServer;
  let images: ImageServiceClient;
  let dir: string;
  let clock: FakeClock;
  let agent: Agent | undefined;
  let recorder: InMemoryEventRecorder;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    recorder = new InMemoryEventRecorder({ now: () => clock.now() });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-imagegc-'));
    fs.mkdirSync(path.join(dir, 'manifests'));
    server = await InMemoryCriServer.start({
      images: [used, { ref: pause, pinned: true }, ...unused],
      clock,
      imageFsMountpoint: dir,
    });
    images = new ImageServiceClient({ endpoint: server.endpoint });
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    images.close();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tags = async () => (await images.listImages({})).images.flatMap((i) => i.repoTags).sort();

  it('removes unused images; keeps the image of a pod and the pinned one', async () => {
    fs.writeFileSync(
      path.join(dir, 'manifests', 'a.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'a' },
        spec: { containers: [{ name: 'main', image: used, command: ['sleep', '3600'] }] },
      }),
    );
    agent = createAgent({
      runtimeEndpoint: server.endpoint,
      podManifestPath: path.join(dir, 'manifests'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
      recorder,
      imageGCHighThresholdPercent: 1,
      imageGCLowThresholdPercent: 0,
      // The first collection runs as the agent starts, maybe before the pod's container exists:
      // a minimum age keeps every image through it (with 0 the pod's image could go, as upstream).
      imageMinimumGCAgeMs: 1000,
      imageGCPeriodMs: 10_000,
    });
    await agent.start();
    await pump(clock, () => agent!.kubelet.podsWithStatus()[0]?.status?.phase === 'Running');
    expect(server.calls('RemoveImage')).toHaveLength(0);
    clock.advance(10_000);
    const left = await pump(clock, () => (server.calls('RemoveImage').length >= 2 ? true : undefined));
    expect(left).toBe(true);
    expect(await tags()).toEqual([pause, used].sort());
    // Not enough could be freed (a real disk): upstream's event, on the Node.
    expect(recorder.events.find((e) => e.reason === 'FreeDiskSpaceFailed')).toMatchObject({
      type: 'Warning',
      object: { kind: 'Node', name: 'node-a' },
    });
  });

  it('refuses options upstream refuses', () => {
    expect(() =>
      createAgent({
        runtimeEndpoint: server.endpoint,
        podManifestPath: path.join(dir, 'manifests'),
        rootDirectory: path.join(dir, 'root'),
        clock,
        imageGCHighThresholdPercent: 50,
        imageGCLowThresholdPercent: 60,
      }),
    ).toThrow(
      'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 60 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 50',
    );
  });
});
