// End to end: pod fields that ask for more isolation, through `kubelet-kit run` on the private
// containerd (1.6: no user namespaces, no SupplementalGroupsPolicy; this host may lack AppArmor).
// Each either works as upstream or the pod is refused with upstream's reason: never weaker.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/pod-fields.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { appArmorHostError } from '@kubelet-kit/node';
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

const nodeName = `fields-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";

function manifest(name: string, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: 'main', image: busybox, imagePullPolicy: 'Never', command: ['sh', '-c', sleeper] },
      ],
      ...spec,
    },
  };
}

describe('isolation fields through the agent on containerd', () => {
  let dir: string;
  let agent: AgentProcess | undefined;
  const hostAppArmor = appArmorHostError();

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-fields-e2e-'));
    const manifests = path.join(dir, 'manifests');
    const classes = path.join(dir, 'runtime-classes');
    fs.mkdirSync(manifests);
    fs.mkdirSync(classes);
    // containerd's default runtime here is named runc.
    fs.writeFileSync(
      path.join(classes, 'runc.yaml'),
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: plain-runc\nhandler: runc\n---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: kata\nhandler: kata\n',
    );
    const pods = [
      manifest('plain'),
      manifest('with-class', { runtimeClassName: 'plain-runc' }),
      manifest('unknown-class', { runtimeClassName: 'no-such-class' }),
      manifest('unknown-handler', { runtimeClassName: 'kata' }),
      manifest('userns', { hostUsers: false }),
      manifest('apparmor', {
        containers: [
          {
            name: 'main',
            image: busybox,
            imagePullPolicy: 'Never',
            command: ['sh', '-c', sleeper],
            securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'k8s-e2e-deny' } },
          },
        ],
      }),
      manifest(
        'apparmor-annotation',
        {},
        {
          annotations: { 'container.apparmor.security.beta.kubernetes.io/main': 'localhost/k8s-e2e-deny' },
        },
      ),
      manifest('strict-groups', {
        securityContext: { runAsUser: 1000, supplementalGroups: [5000], supplementalGroupsPolicy: 'Strict' },
      }),
      manifest('merge-groups', {
        securityContext: { runAsUser: 1000, supplementalGroups: [5000], supplementalGroupsPolicy: 'Merge' },
      }),
    ];
    for (const p of pods)
      fs.writeFileSync(path.join(manifests, `${p.metadata.name}.json`), JSON.stringify(p));
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: ['--runtime-classes', classes],
    });
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const podOf = async (name: string) => podNamed(await agent!.pods(), podName(name));
  const running = (name: string) =>
    waitFor(`${name} running`, async () => {
      const p = await podOf(name);
      return p?.status?.phase === 'Running' ? p : undefined;
    });
  const rejected = (name: string) =>
    waitFor(`${name} rejected`, async () => {
      const p = await podOf(name);
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
  /** The message of the pod's FailedCreatePodSandBox event, from the agent's log. */
  const sandboxFailure = (name: string) =>
    waitFor(`FailedCreatePodSandBox of ${name}`, async () => {
      const e = agent!.logs.find(
        (l) => l.event === 'FailedCreatePodSandBox' && String(l.object).endsWith(`/${podName(name)}`),
      );
      return e ? String(e.msg) : undefined;
    });

  it('a plain pod, and one whose RuntimeClass names the runc handler, run', async () => {
    await running('plain');
    await running('with-class');
    const { sandboxes } = await runtimeState(nodeName);
    const sandbox = sandboxes.find((s) => s.metadata?.name === podName('with-class'));
    expect(sandbox).toBeDefined();
    // containerd records the handler the sandbox was run with.
    expect(sandbox!.runtimeHandler).toBe('runc');
  }, 90_000);

  it("an unknown RuntimeClass gets no sandbox: the pod fails to start with upstream's error", async () => {
    expect(await sandboxFailure('unknown-class')).toBe(
      'Failed to create pod sandbox: runtimeclass.node.k8s.io "no-such-class" not found',
    );
    const p = await podOf('unknown-class');
    expect(p?.status?.phase).toBe('Pending');
    const { sandboxes } = await runtimeState(nodeName);
    expect(sandboxes.some((s) => s.metadata?.name === podName('unknown-class'))).toBe(false);
  }, 90_000);

  it("a RuntimeClass whose handler containerd lacks fails RunPodSandbox with containerd's error", async () => {
    expect(await sandboxFailure('unknown-handler')).toBe(
      'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "kata" is configured',
    );
  }, 90_000);

  it('hostUsers false on a runtime without user namespaces gets no sandbox, rather than host users', async () => {
    expect(await sandboxFailure('userns')).toBe(
      'Failed to create pod sandbox: RuntimeClass handler "" does not support user namespaces',
    );
    const { sandboxes } = await runtimeState(nodeName);
    expect(sandboxes.some((s) => s.metadata?.name === podName('userns'))).toBe(false);
  }, 90_000);

  it('an AppArmor Localhost profile, by field or by the deprecated annotation, is refused on a host without AppArmor', async () => {
    if (hostAppArmor === undefined) {
      // With AppArmor the profile reaches containerd; an unloaded one fails the container instead.
      return;
    }
    for (const name of ['apparmor', 'apparmor-annotation']) {
      const p = await rejected(name);
      expect(p.status).toMatchObject({
        reason: 'AppArmor',
        message: 'Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host',
      });
    }
    const { sandboxes } = await runtimeState(nodeName);
    expect(sandboxes.some((s) => s.metadata?.name?.startsWith('apparmor'))).toBe(false);
  }, 90_000);

  it('Strict supplemental groups are refused by a runtime without the feature; Merge runs', async () => {
    const p = await rejected('strict-groups');
    expect(p.status).toMatchObject({
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node',
    });
    await running('merge-groups');
    const { sandboxes } = await runtimeState(nodeName);
    expect(sandboxes.some((s) => s.metadata?.name === podName('strict-groups'))).toBe(false);
  }, 90_000);
});
