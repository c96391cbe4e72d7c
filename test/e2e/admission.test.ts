// End to end: admission on containerd through `kubelet-kit run`. Each refused pod ends Failed
// with upstream's reason and message in /pods (and never reaches the runtime), beside a pod with
// safe sysctls that runs. Static pods come from a manifest directory; the NodeName and
// NoExecute-taint cases need API-server pods (static pods get this node's name and are exempt
// from taints), so a small local API server hands those over.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/admission.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
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
import {
  type InMemoryApiserver as FakeApiserver,
  inMemoryApiserver as fakeApiserver,
} from './support/in-memory-apiserver.js';

const nodeName = `e2e-adm-${randomBytes(3).toString('hex')}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";

function staticPod(name: string, spec: Record<string, unknown>, resources?: Record<string, string>): string {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      ...spec,
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c', sleeper],
          ...(resources ? { resources: { requests: resources, limits: resources } } : {}),
        },
      ],
    },
  };
  return JSON.stringify(pod);
}

function apiPod(name: string, spec: Record<string, unknown>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${name}-${nodeName}`,
      namespace: 'default',
      uid: `uid-${name}-${nodeName}`,
      resourceVersion: '1',
    },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: busybox, command: ['sh', '-c', sleeper] }],
      ...spec,
    },
    status: { phase: 'Pending' },
  } as Pod;
}

describe('kubelet-kit run on containerd: admission', () => {
  let dir: string;
  let agent: AgentProcess | undefined;
  let api: FakeApiserver;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-admission-e2e-'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    const write = (name: string, text: string) =>
      fs.writeFileSync(path.join(manifests, `${name}.json`), text);
    write(
      'sysctl',
      staticPod('sysctl', { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] } }),
    );
    write('selector', staticPod('selector', { nodeSelector: { disk: 'hdd' } }));
    write('foo', staticPod('foo', {}, { 'example.com/foo': '3' }));
    write('storage', staticPod('storage', {}, { 'ephemeral-storage': '1Pi' }));
    write(
      'good',
      staticPod(
        'good',
        {
          nodeSelector: { disk: 'ssd', 'kubernetes.io/hostname': nodeName },
          securityContext: {
            sysctls: [
              { name: 'net.ipv4.ip_local_port_range', value: '32768 60999' },
              { name: 'kernel.shm_rmid_forced', value: '1' },
            ],
          },
        },
        { 'example.com/foo': '1' },
      ),
    );
    api = fakeApiserver(nodeName, [
      apiPod('elsewhere', { nodeName: 'some-other-node' }),
      apiPod('untolerated', { nodeName }),
      apiPod('tolerant', {
        nodeName,
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoExecute' }],
      }),
    ]);
    const kubeconfig = await api.listen(path.join(dir, 'kubeconfig'));
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: [
        '--kubeconfig',
        kubeconfig,
        '--node-labels',
        'disk=ssd',
        '--register-with-taints',
        'dedicated=db:NoExecute',
        '--extended-resources',
        'example.com/foo=2',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.close();
    await removeNodePods(nodeName);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const failedWith = async (name: string) =>
    waitFor(`${name} Failed`, async () => {
      const pod = podNamed(await agent!.pods(), name);
      return pod?.status?.phase === 'Failed' ? pod : undefined;
    });

  it.each([
    ['sysctl', 'SysctlForbidden', 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted'],
    [
      'selector',
      'NodeAffinity',
      "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    ],
    [
      'foo',
      'OutOfexample.com/foo',
      // The good pod may have been admitted first and hold 1 of the 2.
      /^Pod was rejected: Node didn't have enough resource: example\.com\/foo, requested: 3, used: [01], capacity: 2$/,
    ],
    [
      'storage',
      'OutOfephemeral-storage',
      /^Pod was rejected: Node didn't have enough resource: ephemeral-storage, requested: 1125899906842624, used: 0, capacity: \d+$/,
    ],
  ])('static pod %s ends Failed with %s', async (name, reason, message) => {
    const pod = await failedWith(`${name}-${nodeName}`);
    expect(pod.status?.reason).toBe(reason);
    expect(pod.status?.message).toMatch(message);
  });

  it.each([
    [
      'elsewhere',
      'NodeName',
      "Pod was rejected: Predicate NodeName failed: node(s) didn't match the requested node name",
    ],
    [
      'untolerated',
      'TaintToleration',
      "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    ],
  ])('API server pod %s ends Failed with %s, and the API server is told', async (name, reason, message) => {
    const pod = await failedWith(`${name}-${nodeName}`);
    expect(pod.status?.reason).toBe(reason);
    expect(pod.status?.message).toBe(message);
    const full = `${name}-${nodeName}`;
    const patch = await waitFor(`${name} status patched`, async () =>
      api.patched.get(full)?.status?.phase === 'Failed' ? api.patched.get(full) : undefined,
    );
    expect(patch?.status?.reason).toBe(reason);
  });

  it('runs the pods that pass beside them, and no refused pod reaches the runtime', async () => {
    await waitFor('good, tolerant Running', async () => {
      const pods = await agent!.pods();
      return isRunningWithIP(podNamed(pods, `good-${nodeName}`)) &&
        isRunningWithIP(podNamed(pods, `tolerant-${nodeName}`))
        ? true
        : undefined;
    });
    const { sandboxes } = await runtimeState(nodeName);
    const names = sandboxes.map((s) => s.metadata?.name).sort();
    expect(names).toEqual([`good-${nodeName}`, `tolerant-${nodeName}`]);
    const rejected = agent!.logs.filter((l) => l.msg === 'pod rejected').map((l) => l.reason);
    expect(rejected.sort()).toEqual(
      [
        'NodeAffinity',
        'NodeName',
        'OutOfephemeral-storage',
        'OutOfexample.com/foo',
        'SysctlForbidden',
        'TaintToleration',
      ].sort(),
    );
  });
});
