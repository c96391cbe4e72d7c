// End to end: `kubelet-kit run --feature-gates EventedPLEG=true` on the private containerd,
// which (1.6) does not implement GetContainerEvents: the agent falls back to the generic relist
// and still runs a static pod, and sees its container die and restart.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/evented-pleg.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  isRunningWithIP,
  podNamed,
  removeNodePods,
  startAgent,
  waitFor,
} from './support/agent-process.js';

const nodeName = `e2e-evpleg-${randomBytes(3).toString('hex')}`;

describe('kubelet-kit run with EventedPLEG on containerd 1.6', () => {
  let dir: string;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-evpleg-e2e-'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    fs.writeFileSync(
      path.join(manifests, 'ev.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ev\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: ${busybox}\n    command: ["sh", "-c", "sleep 3; exit 1"]\n`,
    );
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: ['--feature-gates', 'EventedPLEG=true'],
    });
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName).catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('falls back to relisting and runs the pod, restarting its container', async () => {
    const a = agent as AgentProcess;
    await waitFor('the fallback log line', async () =>
      a.logs.find((l) => String(l.msg).startsWith('EventedPLEG: runtime events unavailable')),
    );
    await waitFor('the pod Running', async () => {
      const pod = podNamed(await a.pods(), `ev-${nodeName}`);
      return isRunningWithIP(pod) ? pod : undefined;
    });
    // The exit is seen by the 1 s relist, not the 300 s one: the container restarts.
    const restarted = await waitFor('a restart', async () => {
      const pod = podNamed(await a.pods(), `ev-${nodeName}`);
      const cs = pod?.status?.containerStatuses?.[0];
      return cs && cs.restartCount > 0 ? cs : undefined;
    });
    expect(restarted.restartCount).toBeGreaterThan(0);
  }, 120_000);
});
