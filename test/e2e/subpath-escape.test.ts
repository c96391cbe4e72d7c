// End to end: the subPath container escape (CVE-2017-1002101, kubelet-kit issue #23) performed
// against `kubelet-kit run` on the private containerd.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/subpath-escape.test.ts
// A container plants a symlink in an emptyDir; another container of the pod mounts that
// subPath. Joined as text, the link would hand the host's files to the container as root.
import { execFileSync } from 'node:child_process';
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

const nodeName = `subpath-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";
const victims = ['v1', 'v2', 'v3', 'v4'];

function container(name: string, command: string, volumeMounts: Array<Record<string, unknown>>) {
  return { name, image: busybox, imagePullPolicy: 'Never', command: ['sh', '-c', command], volumeMounts };
}

function podManifest(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 1, ...spec },
  };
}

function mountsUnder(dir: string): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((p): p is string => p !== undefined && (p === dir || p.startsWith(`${dir}/`)));
}

function containerStatus(pod: Pod | undefined, name: string) {
  return [...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.containerStatuses ?? [])].find(
    (s) => s.name === name,
  );
}

describe('subPath escape through the agent on containerd', () => {
  let dir: string;
  let manifests: string;
  let root: string;
  let hostDir: string;
  let marker: string;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-subpath-e2e-'));
    manifests = path.join(dir, 'manifests');
    root = path.join(dir, 'root');
    hostDir = path.join(dir, 'host');
    for (const d of [manifests, hostDir]) fs.mkdirSync(d);
    marker = `host-only-${randomBytes(8).toString('hex')}`;
    fs.writeFileSync(path.join(hostDir, 'marker'), marker);
    const write = (name: string, pod: unknown) =>
      fs.writeFileSync(path.join(manifests, `${name}.json`), JSON.stringify(pod, null, 2));

    // (a) The escape: a link to / planted by an init container, mounted by the main one.
    write(
      'escape',
      podManifest('escape', {
        initContainers: [
          container('plant', 'ln -s / /scratch/escape', [{ name: 'scratch', mountPath: '/scratch' }]),
        ],
        containers: [
          container('main', `cat /host${hostDir}/marker; ${sleeper}`, [
            { name: 'scratch', mountPath: '/host', subPath: 'escape' },
          ]),
        ],
        volumes: [{ name: 'scratch', emptyDir: {} }],
      }),
    );
    // A good pod beside it: subPaths of a directory and of a file, one of them created.
    write(
      'good',
      podManifest('good', {
        initContainers: [
          container('prep', 'mkdir -p /scratch/sub && echo ok > /scratch/sub/ok && echo f > /scratch/file', [
            { name: 'scratch', mountPath: '/scratch' },
          ]),
        ],
        containers: [
          container('main', `cat /data/ok /file.txt > /new/seen; ${sleeper}`, [
            { name: 'scratch', mountPath: '/data', subPath: 'sub' },
            { name: 'scratch', mountPath: '/file.txt', subPath: 'file' },
            { name: 'scratch', mountPath: '/new', subPath: 'made/here' },
          ]),
        ],
        volumes: [{ name: 'scratch', emptyDir: {} }],
      }),
    );
    // (b) The race: one container swaps a directory for a link to the host directory, in
    // bursts as fast as it can with a pause as a directory between them (without the pauses
    // every start is refused), while others that mount it as a subPath exit and restart.
    // Each run records in the volume (which outlives the containers and their logs) whether it
    // saw the host's marker, and if so also tries to write to the host.
    const leakCheck =
      'if [ -e /v/marker ]; then echo LEAK >> /all/runs; cat /v/marker; touch /v/pwned; else echo ok >> /all/runs; fi; sleep 1; exit 0';
    write(
      'race',
      podManifest('race', {
        restartPolicy: 'Always',
        containers: [
          container(
            'swapper',
            `trap 'exit 0' TERM; while true; do rm -rf /s/d; mkdir /s/d; sleep 0.2 || sleep 1; i=0; while [ $i -lt 30 ]; do rm -rf /s/d; ln -s ${hostDir} /s/d; rm -rf /s/d; mkdir /s/d; i=$((i+1)); done; done`,
            [{ name: 'shared', mountPath: '/s' }],
          ),
          ...victims.map((v) =>
            container(v, leakCheck, [
              { name: 'shared', mountPath: '/v', subPath: 'd' },
              { name: 'shared', mountPath: '/all' },
            ]),
          ),
        ],
        volumes: [{ name: 'shared', emptyDir: {} }],
      }),
    );

    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: root,
      args: ['--sync-frequency', '3s'],
    });
  });

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    // Unmount whatever is left before removing anything, deepest first: never rm through a mount.
    for (const m of mountsUnder(dir).reverse()) execFileSync('umount', [m]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('fails the escaping container with CreateContainerConfigError while a good pod beside it runs', async () => {
    const pods = await waitFor(
      'the escape refused and the good pod Running',
      async () => {
        const pods = await agent!.pods();
        const waiting = containerStatus(podNamed(pods, podName('escape')), 'main')?.state?.waiting;
        const good = podNamed(pods, podName('good'));
        return waiting?.reason === 'CreateContainerConfigError' && good?.status?.phase === 'Running'
          ? pods
          : undefined;
      },
      120_000,
    );
    expect(containerStatus(podNamed(pods, podName('escape')), 'main')?.state?.waiting).toEqual({
      reason: 'CreateContainerConfigError',
      message: 'failed to prepare subPath for volumeMount "scratch" of container "main"',
    });
    expect(podNamed(pods, podName('escape'))?.status?.phase).toBe('Pending');
    // The runtime never got a container that could read the host.
    const { containers } = await runtimeState(nodeName);
    const named = (pod: string, c: string) =>
      containers.filter(
        (x) =>
          x.labels['io.kubernetes.pod.name'] === podName(pod) &&
          x.labels['io.kubernetes.container.name'] === c,
      );
    expect(named('escape', 'plant')).toHaveLength(1);
    expect(named('escape', 'main')).toEqual([]);
    // The good pod saw its subPaths and nothing else; the created one has the emptyDir's mode.
    const good = podNamed(pods, podName('good'));
    const volume = path.join(
      root,
      'pods',
      good?.metadata?.uid ?? '',
      'volumes/kubernetes.io~empty-dir/scratch',
    );
    await waitFor('the good container to write', async () =>
      fs.existsSync(path.join(volume, 'made/here/seen')) ? true : undefined,
    );
    expect(fs.readFileSync(path.join(volume, 'made/here/seen'), 'utf8')).toBe('ok\nf\n');
    expect(fs.statSync(path.join(volume, 'made/here')).mode & 0o777).toBe(0o777);
    expect(mountsUnder(path.join(root, 'pods', good?.metadata?.uid ?? '', 'volume-subpaths')).length).toBe(3);
  });

  it('never hands a host file to a container racing a link swap over its restarts', async () => {
    // A start that met the link (or no directory) is refused with CreateContainerConfigError
    // and retried; one that met the directory runs, exits and restarts under the backoff.
    const refusals = () =>
      agent!.logs.filter(
        (l) =>
          l.msg === 'Failed to prepare subPath for volumeMount of the container' && l.container !== 'main',
      ).length;
    let last = '';
    const runsFile = async () => {
      const race = podNamed(await agent!.pods(), podName('race'));
      const file = path.join(
        root,
        'pods',
        race?.metadata?.uid ?? '',
        'volumes/kubernetes.io~empty-dir/shared/runs',
      );
      return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
    };
    const runs = await waitFor(
      'the racing containers to start and restart',
      async () => {
        const runs = await runsFile();
        last = JSON.stringify({ refusals: refusals(), runs });
        // Stop early on a leak; otherwise wait for restarts and refusals both. CrashLoopBackOff
        // doubles from 10 s, so a loaded machine fits about six runs in the time given.
        return runs.includes('LEAK') || (runs.length >= 5 && runs.length + refusals() >= 9)
          ? runs
          : undefined;
      },
      150_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; last: ${last}`);
    });
    expect(runs.filter((r) => r !== 'ok')).toEqual([]);
    // The host directory is as the test left it: nothing was written to it through a mount.
    expect(fs.readdirSync(hostDir)).toEqual(['marker']);
    // And no container printed the marker in the logs that are left.
    const logs = path.join(root, 'logs', 'pods');
    for (const d of fs.readdirSync(logs).filter((d) => d.includes(podName('race')))) {
      for (const v of victims) {
        const cdir = path.join(logs, d, v);
        for (const f of fs.existsSync(cdir) ? fs.readdirSync(cdir) : []) {
          expect(fs.readFileSync(path.join(cdir, f), 'utf8')).not.toContain(marker);
        }
      }
    }
  });

  it('leaves no mount under the root directory once the pods are deleted', async () => {
    const uids = (await agent!.pods()).map((p) => p.metadata?.uid ?? '');
    expect(mountsUnder(root).length).toBeGreaterThan(0);
    for (const f of fs.readdirSync(manifests)) fs.rmSync(path.join(manifests, f));
    await waitFor(
      'the pods gone and their directories removed',
      async () => {
        const pods = await agent!.pods();
        const left = uids.filter((u) => fs.existsSync(path.join(root, 'pods', u)));
        return pods.length === 0 && left.length === 0 ? true : undefined;
      },
      120_000,
    );
    expect(mountsUnder(root)).toEqual([]);
    // Nothing was deleted through a bind mount.
    expect(fs.readFileSync(path.join(hostDir, 'marker'), 'utf8')).toBe(marker);
  });
  it('unmounts the subPaths of a pod deleted while the agent was down, at its next start', async () => {
    fs.writeFileSync(
      path.join(manifests, 'orphan.json'),
      JSON.stringify(
        podManifest('orphan', {
          containers: [
            container('main', `mkdir -p /all/sub; ${sleeper}`, [
              { name: 'data', mountPath: '/sub', subPath: 'sub' },
              { name: 'data', mountPath: '/all' },
            ]),
          ],
          volumes: [{ name: 'data', emptyDir: {} }],
        }),
      ),
    );
    const uid = await waitFor(
      'the orphan-to-be Running',
      async () => {
        const pod = podNamed(await agent!.pods(), podName('orphan'));
        return pod?.status?.phase === 'Running' ? pod.metadata?.uid : undefined;
      },
      120_000,
    );
    const podDir = path.join(root, 'pods', uid ?? '');
    expect(mountsUnder(path.join(podDir, 'volume-subpaths'))).toEqual([
      path.join(podDir, 'volume-subpaths/data/main/0'),
    ]);
    // The agent dies without cleaning up; the pod goes while it is down.
    await agent!.kill();
    fs.rmSync(path.join(manifests, 'orphan.json'));
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: root,
      args: ['--sync-frequency', '3s'],
    });
    await waitFor(
      'the orphaned pod directory removed',
      async () => (fs.existsSync(podDir) ? undefined : true),
      120_000,
    );
    expect(mountsUnder(root)).toEqual([]);
  });
});
