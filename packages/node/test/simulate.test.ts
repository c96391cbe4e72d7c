// Simulated nodes (simulateNodes, what `kubelet-kit simulate` runs) against the in-memory API
// server, on one fake clock: three nodes register and turn Ready, renew their Leases, run the
// pods bound to them through the real pipeline, let a pod's container exit as its command says
// (phase Succeeded or Failed), and finish a delete.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import type { Node, Pod } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Simulation, simulateNodes } from '../src/simulate.js';
import { parseSimulatedExit, simulatedExit } from '../src/simulate-containers.js';
import { pump } from './pump.js';

interface Lease {
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

const ready = (n: Node | undefined) =>
  n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

function pod(name: string, nodeName: string, command: string[], extra: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: 'registry.example/app:1', command }],
      ...extra,
    },
  };
}

describe('simulateNodes against the in-memory API server', () => {
  let clock: FakeClock;
  let api: FakeApiServer;
  let dir: string;
  let sim: Simulation | undefined;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 11, 3));
    api = new FakeApiServer({ clock });
    await api.start();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-simulate-'));
  });

  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
    await api.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs three Ready nodes that renew their Leases and run, finish and delete their pods', async () => {
    const resolv = path.join(dir, 'resolv.conf');
    fs.writeFileSync(resolv, 'nameserver 192.0.2.53\n');
    sim = await simulateNodes({
      nodes: 3,
      kubeconfig: api.writeKubeconfig(path.join(dir, 'kubeconfig')),
      rootDirectory: path.join(dir, 'nodes'),
      clock,
      agent: { resolvConf: resolv, nodeLeaseDurationSeconds: 8 },
    });
    expect(sim.nodes.map((n) => n.name)).toEqual(['sim-0', 'sim-1', 'sim-2']);

    // Registered and Ready, with upstream's capacity of pods.
    const nodes = await pump(clock, () => {
      const all = ['sim-0', 'sim-1', 'sim-2'].map((n) => api.get<Node>('nodes', undefined, n));
      return all.every(ready) ? all : undefined;
    });
    expect(nodes.map((n) => n?.status?.capacity?.pods)).toEqual(['110', '110', '110']);

    // Each Lease is held by its node and renewed every quarter of its duration.
    const leaseOf = (n: string) => api.get<Lease>('leases', 'kube-node-lease', n);
    const first = await pump(clock, () => {
      const l = ['sim-0', 'sim-1', 'sim-2'].map(leaseOf);
      return l.every((x) => x?.spec?.renewTime) ? l : undefined;
    });
    expect(first.map((l) => l?.spec?.holderIdentity)).toEqual(['sim-0', 'sim-1', 'sim-2']);
    await pump(clock, () =>
      ['sim-0', 'sim-1', 'sim-2'].every(
        (n, i) =>
          Date.parse(leaseOf(n)?.spec?.renewTime ?? '') >= Date.parse(first[i]?.spec?.renewTime ?? '') + 2000,
      ),
    );

    // Pods bound to sim nodes run; a Job-like pod's container exits as its command says.
    const core = api.makeKubeConfig().makeApiClient(CoreV1Api);
    const create = (p: Pod) => core.createNamespacedPod({ namespace: 'default', body: p as never });
    await create(pod('web', 'sim-1', ['sleep', '3600']));
    await create(pod('job', 'sim-2', ['sh', '-c', 'sleep 5; exit 0'], { restartPolicy: 'Never' }));
    await create(pod('bad', 'sim-0', ['sh', '-c', 'exit 3'], { restartPolicy: 'Never' }));
    const web = await pump(clock, () => {
      const p = api.get<Pod>('pods', 'default', 'web');
      return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
    });
    expect(web.status?.podIP).toMatch(/^10\.101\./);
    expect(web.status?.containerStatuses?.[0]?.imageID).toContain('registry.example/app@sha256:');
    const job = await pump(clock, () => {
      const p = api.get<Pod>('pods', 'default', 'job');
      return p?.status?.phase === 'Succeeded' ? p : undefined;
    });
    expect(job.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    const bad = await pump(clock, () => {
      const p = api.get<Pod>('pods', 'default', 'bad');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    expect(bad.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);

    // A deleted pod is stopped and removed from the server by its node (grace-0 delete).
    await core.deleteNamespacedPod({ name: 'web', namespace: 'default' });
    await pump(clock, () => api.get('pods', 'default', 'web') === undefined);
    const node1 = sim.nodes[1];
    await pump(clock, () => node1?.agent.kubelet.podsWithStatus().length === 0);
    // The runtime only ever ran web on sim-1.
    expect(
      api
        .list<Pod>('pods', 'default')
        .map((p) => `${p.metadata?.name}@${p.spec?.nodeName}`)
        .sort(),
    ).toEqual(['bad@sim-0', 'job@sim-2']);
    // Three agents over real gRPC and HTTP: more real I/O turns than one agent's tests take.
  }, 60_000);

  it('adds nodes numbered on from the last', async () => {
    sim = await simulateNodes({
      nodes: 1,
      kubeconfig: api.writeKubeconfig(path.join(dir, 'kubeconfig')),
      rootDirectory: path.join(dir, 'nodes'),
      nodeNamePrefix: 'edge-',
      maxPods: 20,
      clock,
    });
    const added = await sim.addNodes(2);
    expect(added.map((n) => n.name)).toEqual(['edge-1', 'edge-2']);
    expect(sim.nodes.map((n) => n.name)).toEqual(['edge-0', 'edge-1', 'edge-2']);
    const nodes = await pump(clock, () => {
      const all = sim?.nodes.map((n) => api.get<Node>('nodes', undefined, n.name));
      return all?.every(ready) ? all : undefined;
    });
    expect(nodes.map((n) => n?.status?.allocatable?.pods)).toEqual(['20', '20', '20']);
  });
});

describe('simulated container exits', () => {
  const exitOf = (command: string[], args: string[] = [], podAnnotations: Record<string, string> = {}) =>
    simulatedExit({ name: 'main', command, args, podAnnotations });

  it.each([
    { command: ['sleep', '5'], want: { afterMs: 5000, exitCode: 0 } },
    { command: ['sleep', 'infinity'], want: undefined },
    { command: ['true'], want: { afterMs: 0, exitCode: 0 } },
    { command: ['/bin/false'], want: { afterMs: 0, exitCode: 1 } },
    { command: ['false'], want: { afterMs: 0, exitCode: 1 } },
    { command: ['sh', '-c', 'echo hi; sleep 1.5 && exit 7'], want: { afterMs: 1500, exitCode: 7 } },
    { command: ['/bin/sh', '-c', 'sleep 2m\nfalse'], want: { afterMs: 120_000, exitCode: 1 } },
    { command: ['sh', '-c', 'exit 300'], want: { afterMs: 0, exitCode: 44 } },
    { command: ['sh', '-c', 'while true; do sleep 1; done'], want: undefined },
    { command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600"], want: undefined },
    { command: ['nginx'], want: undefined },
    { command: [], want: undefined },
  ])('$command', ({ command, want }) => {
    expect(exitOf(command)).toEqual(want);
  });

  it('reads args after the command, and the pod annotation over both', () => {
    expect(exitOf(['sh'], ['-c', 'sleep 1; exit 2'])).toEqual({ afterMs: 1000, exitCode: 2 });
    expect(exitOf(['nginx'], [], { 'simulate.kubelet-kit.io/exit.main': 'code=1,after=30s' })).toEqual({
      afterMs: 30_000,
      exitCode: 1,
    });
    expect(exitOf(['sleep', '5'], [], { 'simulate.kubelet-kit.io/exit.other': 'code=1' })).toEqual({
      afterMs: 5000,
      exitCode: 0,
    });
  });

  it('names what is wrong in a bad annotation', () => {
    expect(() => parseSimulatedExit('code=1,after=soon')).toThrow(
      '"after=soon" is not code=<0-255> or after=<duration>',
    );
    expect(() => parseSimulatedExit('code=256')).toThrow(/code=256/);
  });
});
