// End to end, without containerd: the real `kubelet-kit simulate` command against the in-memory
// API server of `@kubelet-kit/apiserver/testing`, seen through the real kubectl. Three nodes
// register and turn Ready, renew their Leases, run a pod applied with kubectl, and the command
// stops cleanly on SIGTERM. A few seconds; needs `npm run build` and a kubectl
// (scripts/kubectl.sh), nothing else.
//   npm run build && npx vitest run --project e2e test/e2e/simulate.test.ts
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import type { Node } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath } from './support/agent-process.js';
import { findKubectl } from './support/kubectl.js';

const run = promisify(execFile);
const ready = (n: Node | undefined) =>
  n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

describe('kubelet-kit simulate', () => {
  let dir: string;
  let api: FakeApiServer;
  let kubeconfig: string;
  let kubectlPath: string;
  let child: ChildProcess | undefined;
  let output = '';

  const kubectl = async (...args: string[]) =>
    (await run(kubectlPath, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 })).stdout;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-simulate-e2e-'));
    kubectlPath = findKubectl();
    api = new FakeApiServer();
    await api.start();
    kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child?.once('exit', r));
    }
    await api.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs three nodes kubectl sees Ready, with renewed Leases and a running pod', async () => {
    const proc = spawn(
      cliPath,
      [
        'simulate',
        '--nodes',
        '3',
        '--kubeconfig',
        kubeconfig,
        '--node-name-prefix',
        'e2e-sim-',
        '--root-dir',
        path.join(dir, 'root'),
        '--node-lease-duration-seconds',
        '4',
        '--node-status-update-frequency',
        '1s',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    proc.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    proc.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const names = ['e2e-sim-0', 'e2e-sim-1', 'e2e-sim-2'];
    for (const name of names) await api.waitFor<Node>('nodes', undefined, name, ready, 60_000);
    expect(output).toContain('kubelet-kit simulate: 3 nodes running (e2e-sim-0, e2e-sim-1, e2e-sim-2)');

    // kubectl's table: every node Ready, on the in-memory runtime.
    const table = await kubectl('get', 'nodes', '-o', 'wide');
    const rows = table.trim().split('\n').slice(1);
    expect(rows.map((r) => r.split(/\s+/).slice(0, 2))).toEqual(names.map((n) => [n, 'Ready']));
    expect(table).toContain('kubelet-kit-in-memory://');

    // Leases of 4 s are renewed every second.
    const renewed = (name: string) =>
      api.get<{ spec?: { renewTime?: string } }>('leases', 'kube-node-lease', name)?.spec?.renewTime;
    const first = names.map(renewed);
    for (const [i, name] of names.entries())
      await api.waitFor<{ spec?: { renewTime?: string } }>(
        'leases',
        'kube-node-lease',
        name,
        (l) => l?.spec?.renewTime !== undefined && l.spec.renewTime !== first[i],
        10_000,
      );

    // A pod applied with kubectl and bound to a simulated node runs.
    const manifest = path.join(dir, 'pod.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'default' },
        spec: { nodeName: 'e2e-sim-2', containers: [{ name: 'main', image: 'nginx:1.27' }] },
      }),
    );
    await kubectl('apply', '-f', manifest);
    await api.waitFor<{ status?: { phase?: string } }>(
      'pods',
      'default',
      'web',
      (p) => p?.status?.phase === 'Running',
      30_000,
    );
    const pods = await kubectl('get', 'pods', '-o', 'wide');
    expect(pods).toMatch(/web\s+1\/1\s+Running\s+0\s+\S+\s+10\.102\.0\.\d+\s+e2e-sim-2/);

    proc.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => proc.once('exit', r));
    expect(code).toBe(0);
  });
});
