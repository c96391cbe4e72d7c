// End to end: RuntimeClasses from the API server. The agent runs in kubeconfig mode on
// containerd; a small local API server hands it pods bound to this node and serves one
// RuntimeClass (handler runc, containerd's default runtime here). A pod naming it runs with that
// handler; a pod naming a class the server lacks gets no sandbox and upstream's not-found error.
// A --runtime-classes file beside the kubeconfig fills in a name the server lacks, and loses to
// the server's class on a name both have.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/runtimeclass-apiserver.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
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

const nodeName = `e2e-rcapi-${randomBytes(3).toString('hex')}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";
const podName = (name: string) => `${name}-${nodeName}`;

function apiPod(name: string, runtimeClassName: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(name),
      namespace: 'default',
      uid: `uid-${podName(name)}`,
      resourceVersion: '1',
    },
    spec: {
      nodeName,
      runtimeClassName,
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: 'main', image: busybox, imagePullPolicy: 'Never', command: ['sh', '-c', sleeper] },
      ],
    },
    status: { phase: 'Pending' },
  } as Pod;
}

describe('kubelet-kit run on containerd: RuntimeClasses from the API server', () => {
  let dir: string;
  let agent: AgentProcess | undefined;
  let api: FakeApiserver | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-rcapi-e2e-'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    // A file class of the same name as the server's, with a handler containerd lacks: if the
    // file won, the pod naming it would not run.
    const classes = path.join(dir, 'runtime-classes.yaml');
    fs.writeFileSync(
      classes,
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: served-runc\nhandler: no-such-handler\n---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: file-runc\nhandler: runc\n',
    );
    api = fakeApiserver(
      nodeName,
      [apiPod('served', 'served-runc'), apiPod('missing', 'x'), apiPod('from-file', 'file-runc')],
      // List items come without apiVersion and kind, as from a real server.
      [{ metadata: { name: 'served-runc', resourceVersion: '1' }, handler: 'runc' }],
    );
    const kubeconfig = await api.listen(path.join(dir, 'kubeconfig'));
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: ['--kubeconfig', kubeconfig, '--runtime-classes', classes],
    });
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.close();
    await removeNodePods(nodeName);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const podOf = async (name: string) => podNamed(await agent!.pods(), podName(name));
  const running = (name: string) =>
    waitFor(`${name} running`, async () => {
      const p = await podOf(name);
      return p?.status?.phase === 'Running' ? p : undefined;
    });

  it("a pod naming the server's RuntimeClass runs with its handler", async () => {
    await running('served');
    const { sandboxes } = await runtimeState(nodeName);
    const sandbox = sandboxes.find((s) => s.metadata?.name === podName('served'));
    expect(sandbox?.runtimeHandler).toBe('runc');
  }, 90_000);

  it('a --runtime-classes file supplies a name the server lacks', async () => {
    await running('from-file');
  }, 90_000);

  it("a pod naming a class the server lacks gets upstream's not-found error and no sandbox", async () => {
    const msg = await waitFor('FailedCreatePodSandBox of missing', async () => {
      const e = agent!.logs.find(
        (l) => l.event === 'FailedCreatePodSandBox' && String(l.object).endsWith(`/${podName('missing')}`),
      );
      return e ? String(e.msg) : undefined;
    });
    expect(msg).toBe('Failed to create pod sandbox: runtimeclass.node.k8s.io "x" not found');
    expect((await podOf('missing'))?.status?.phase).toBe('Pending');
    const { sandboxes } = await runtimeState(nodeName);
    expect(sandboxes.map((s) => s.metadata?.name)).not.toContain(podName('missing'));
  }, 90_000);
});
