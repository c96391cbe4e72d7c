import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ContainerEventsUnimplementedError } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { KubeGenericRuntimeManager } from '@kubelet-kit/kuberuntime';
import { EventedPLEG, GenericPLEG, type PodLifecycleEvent } from '@kubelet-kit/pleg';
import { afterEach, describe, expect, it } from 'vitest';
import { criContainerEventSource } from '../src/container-events.js';

const image = 'docker.io/library/busybox:1.36';
const uid = 'uid-ev';
const podLabels = {
  'io.kubernetes.pod.uid': uid,
  'io.kubernetes.pod.name': 'ev',
  'io.kubernetes.pod.namespace': 'default',
};

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(containerEvents: boolean) {
  const server = await InMemoryCriServer.start({ containerEvents, images: [{ ref: image }] });
  const rs = new RuntimeServiceClient({ endpoint: server.endpoint });
  const is = new ImageServiceClient({ endpoint: server.endpoint });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-evented-'));
  const runtime = new KubeGenericRuntimeManager({
    runtimeService: rs,
    imageService: is,
    rootDirectory: dir,
    podLogsRootDirectory: path.join(dir, 'logs'),
    nodeName: 'n',
  });
  const clock = new FakeClock();
  const logger = new InMemoryLogger();
  const generic = new GenericPLEG({ runtime, clock, logger, channelCapacity: 0 });
  const pleg = new EventedPLEG({ source: criContainerEventSource(rs), generic, runtime, clock, logger });
  const events: PodLifecycleEvent[] = [];
  pleg.watch((e) => events.push(e));
  cleanups.push(async () => {
    pleg.stop();
    await pleg.whenStopped();
    runtime.close();
    rs.close();
    is.close();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { server, rs, clock, generic, pleg, events };
}

describe('evented PLEG on the in-memory CRI', () => {
  it('the CRI event stream becomes pod lifecycle events and fresh cache entries', async () => {
    const { server, rs, clock, pleg, events } = await setup(true);
    pleg.start();
    await clock.tick(0);
    await expect.poll(() => server.calls('GetContainerEvents').length).toBe(1);
    // The server subscribes the stream just after the call is recorded.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const { podSandboxId } = await rs.runPodSandbox({
      config: { metadata: { name: 'ev', namespace: 'default', uid, attempt: 0 }, labels: podLabels },
    });
    const { containerId } = await rs.createContainer({
      podSandboxId,
      config: {
        metadata: { name: 'c', attempt: 0 },
        image: { image },
        command: ['sleep', '3600'],
        labels: { ...podLabels, 'io.kubernetes.container.name': 'c' },
      },
    });
    await rs.startContainer({ containerId });
    await expect.poll(() => events).toContainEqual({ id: uid, type: 'ContainerStarted', data: containerId });
    await expect.poll(() => pleg.cache.get(uid).status?.containerStatuses[0]?.state).toBe('running');

    server.exitContainer(containerId, 3);
    await expect.poll(() => events).toContainEqual({ id: uid, type: 'ContainerDied', data: containerId });
    await expect.poll(() => pleg.cache.get(uid).status?.containerStatuses[0]?.exitCode).toBe(3);
    expect(pleg.stats().fellBack).toBe(false);
  });

  it('falls back to the generic relist when the runtime does not implement GetContainerEvents', async () => {
    const { generic, pleg } = await setup(false);
    pleg.start();
    await expect.poll(() => pleg.stats().fellBack).toBe(true);
    expect(generic.running).toBe(true);
    expect(generic.relistDurations.relistPeriodMs).toBe(1_000);
  });

  it('the source turns UNIMPLEMENTED into ContainerEventsUnimplementedError', async () => {
    const { rs } = await setup(false);
    const source = criContainerEventSource(rs);
    const it = source.getContainerEvents(new AbortController().signal)[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toBeInstanceOf(ContainerEventsUnimplementedError);
  });
});
