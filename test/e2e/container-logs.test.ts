// End to end: container logs on a private containerd. `kubelet-kit run --kubeconfig` against the
// in-memory API server (its pods/log proxies to the agent's /containerLogs), driven through the
// real `kubectl logs` (-f, --tail, --previous, --since, --timestamps) and straight through
// /containerLogs; and log rotation: a pod writing 30 MiB with --container-log-max-size 10Mi ends
// with at most 5 files of about 10 MiB, and the newest lines still read.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/container-logs.test.ts
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FakeApiServer, type KubeObject } from '@kubelet-kit/apiserver/testing';
import type { Pod } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, busybox, removeNodePods, startAgent, waitFor } from './support/agent-process.js';
import { findKubectl } from './support/kubectl.js';

const run = promisify(execFile);
const nodeName = `e2e-logs-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
const MiB = 1024 * 1024;

function podManifest(name: string, command: string, volumes = false) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName(name), namespace: 'default' },
    spec: {
      nodeName,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: busybox,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', command],
          ...(volumes ? { volumeMounts: [{ name: 'data', mountPath: '/data' }] } : {}),
        },
      ],
      ...(volumes ? { volumes: [{ name: 'data', emptyDir: {} }] } : {}),
    },
  };
}

describe('container logs: kubectl logs and rotation', () => {
  let dir: string;
  let kubeconfig: string;
  let kubectlPath: string;
  let api: FakeApiServer;
  let agent: AgentProcess | undefined;
  const podLogsDir = () => path.join(dir, 'root', 'logs', 'pods');

  const kubectl = async (...args: string[]) =>
    (await run(kubectlPath, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000, maxBuffer: 64 * MiB }))
      .stdout;
  const apply = async (name: string, manifest: unknown) => {
    const file = path.join(dir, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(manifest));
    return kubectl('apply', '-f', file);
  };
  const apiPod = (name: string) => api.get<Pod & KubeObject>('Pod', 'default', podName(name));
  const running = (name: string, restarts = 0) =>
    waitFor(
      `${name} running (restarts ≥ ${restarts})`,
      async () => {
        const cs = apiPod(name)?.status?.containerStatuses?.[0];
        return cs?.state?.running && cs.restartCount >= restarts ? cs : undefined;
      },
      120_000,
    );

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-logs-e2e-'));
    kubectlPath = findKubectl();
    api = new FakeApiServer({ kubeletScheme: 'https' });
    await api.start();
    kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: [
        '--kubeconfig',
        kubeconfig,
        // The API server proxies to the Node's InternalIP: the port must answer there.
        '--address',
        '0.0.0.0',
        '--container-log-max-size',
        '10Mi',
        '--container-log-max-files',
        '5',
        '--container-log-monitor-interval',
        '3s',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.stop();
    await removeNodePods(nodeName);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('kubectl logs: all lines, --tail, --since, --timestamps, -f', async () => {
    // A line every 200 ms, numbered.
    await apply(
      'counter',
      podManifest('counter', 'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.2; done'),
    );
    await running('counter');
    const pod = podName('counter');
    await waitFor('10 lines', async () =>
      (await kubectl('logs', pod)).split('\n').length > 10 ? true : undefined,
    );

    const all = (await kubectl('logs', pod)).trimEnd().split('\n');
    expect(all.slice(0, 3)).toEqual(['line 0', 'line 1', 'line 2']);
    expect(all.every((l, i) => l === `line ${i}`)).toBe(true);

    const tail = (await kubectl('logs', pod, '--tail', '3')).trimEnd().split('\n');
    expect(tail).toHaveLength(3);
    const last = Number(tail[2]!.split(' ')[1]);
    expect(tail).toEqual([`line ${last - 2}`, `line ${last - 1}`, `line ${last}`]);

    // Five lines a second: about ten within 2 s, far fewer than all of them.
    await new Promise((r) => setTimeout(r, 4000));
    const since = (await kubectl('logs', pod, '--since', '2s')).trimEnd().split('\n');
    expect(since.length).toBeGreaterThanOrEqual(5);
    expect(since.length).toBeLessThanOrEqual(15);

    const stamped = (await kubectl('logs', pod, '--timestamps', '--tail', '2')).trimEnd().split('\n');
    for (const l of stamped)
      expect(l).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) line \d+$/);

    // Follow: new lines keep coming, beyond what was there at the start.
    const follow = spawn(kubectlPath, ['--kubeconfig', kubeconfig, 'logs', '-f', '--tail', '1', pod]);
    let followed = '';
    follow.stdout.on('data', (d: Buffer) => {
      followed += d.toString();
    });
    try {
      const first = await waitFor('a first followed line', async () => /line (\d+)\n/.exec(followed)?.[1]);
      await waitFor('ten more followed lines', async () =>
        followed.includes(`line ${Number(first) + 10}\n`) ? true : undefined,
      );
      const got = followed.trimEnd().split('\n');
      expect(got.every((l, i) => l === `line ${Number(first) + i}`)).toBe(true);
    } finally {
      follow.kill();
    }

    // Straight at the agent: the query options as upstream's, and its refusals.
    const base = `${agent!.baseUrl}/containerLogs/default/${pod}/main`;
    expect(await (await agent!.fetch(`${base}?tailLines=1&limitBytes=4`)).text()).toBe('line');
    const bad = await agent!.fetch(`${base}?tailLines=-1`);
    expect(bad.status).toBe(422);
    const noPrevious = await agent!.fetch(`${base}?previous=true`);
    expect([noPrevious.status, await noPrevious.text()]).toEqual([
      400,
      `previous terminated container "main" in pod "${pod}" not found`,
    ]);
    const missing = await agent!.fetch(`${agent!.baseUrl}/containerLogs/default/${pod}/nope`);
    expect([missing.status, await missing.text()]).toEqual([
      404,
      `container "nope" not found in pod "${pod}"`,
    ]);
  }, 180_000);

  it('kubectl logs --previous: the terminated instance after a restart', async () => {
    // The first run exits; the second stays up. An emptyDir counts the runs.
    await apply(
      'restarter',
      podManifest(
        'restarter',
        'n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo "run $n"; if [ $n -ge 2 ]; then while true; do sleep 1; done; fi; sleep 1; exit 1',
        true,
      ),
    );
    const pod = podName('restarter');
    // The API server's answer for a container without a previous instance: a 400.
    await expect(run(kubectlPath, ['--kubeconfig', kubeconfig, 'logs', pod, '--previous'])).rejects.toThrow(
      /BadRequest/,
    );
    await running('restarter', 1);
    expect((await kubectl('logs', pod)).trim()).toBe('run 2');
    expect((await kubectl('logs', pod, '--previous')).trim()).toBe('run 1');
  }, 180_000);

  it('rotates a 30 MiB log into at most 5 files of about 10 MiB; the newest lines still read', async () => {
    // 1 MiB a second (1024 lines of 1 KiB), 30 times, then a last line.
    const script = [
      'l=$(printf "%1017s" | tr " " x)',
      'n=0; while [ $n -lt 30 ]; do i=0; while [ $i -lt 1024 ]; do echo "$n $l"; i=$((i+1)); done; n=$((n+1)); sleep 1; done',
      'echo done-writing',
      'while true; do sleep 1; done',
    ].join('; ');
    await apply('writer', podManifest('writer', script));
    await running('writer');
    const pod = podName('writer');
    await waitFor(
      'the last line',
      async () => ((await kubectl('logs', pod, '--tail', '1')).trim() === 'done-writing' ? true : undefined),
      150_000,
    );
    // One more monitor tick after the last write, so the last rotation is done.
    await new Promise((r) => setTimeout(r, 4000));
    const uid = apiPod('writer')!.metadata!.uid!;
    const logDir = path.join(podLogsDir(), `default_${pod}_${uid}`, 'main');
    const files = fs.readdirSync(logDir).sort();
    const sizes = files.map((f) => fs.statSync(path.join(logDir, f)).size);
    expect(files.length).toBeLessThanOrEqual(5);
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect(files.filter((f) => f.endsWith('.gz')).length).toBeGreaterThanOrEqual(1);
    // A file can pass the limit by what is written between two monitor ticks (3 s, ~3 MiB with
    // the CRI framing), as upstream's rotation allows.
    for (const s of sizes) expect(s).toBeLessThanOrEqual(10 * MiB + 4 * MiB);
    // The total on disk is bounded though 30 MiB were written (older ones removed, compressed).
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThan(30 * MiB);
    const tail = (await kubectl('logs', pod, '--tail', '2')).trimEnd().split('\n');
    expect(tail[1]).toBe('done-writing');
    expect(tail[0]).toMatch(/^29 x+$/);
  }, 240_000);
});
