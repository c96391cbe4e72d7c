// End to end: pod volumes through `kubelet-kit run` on the private containerd, adapted from the
// Kubernetes node conformance tests (emptyDir, configMap, secret, downwardAPI, hostPath).
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/volumes.test.ts
// The pods are static pods from a manifest directory; their ConfigMaps and Secrets come from
// --object-dir with --allow-static-pod-api-references.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  criEndpoint,
  podNamed,
  removeNodePods,
  startAgent,
  waitFor,
} from './support/agent-process.js';

const nodeName = `vol-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";

function container(name: string, command: string, volumeMounts: Array<Record<string, unknown>>) {
  return { name, image: busybox, imagePullPolicy: 'Never', command: ['sh', '-c', command], volumeMounts };
}

function podManifest(name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: { terminationGracePeriodSeconds: 2, ...spec },
  };
}

describe('pod volumes through the agent on containerd', () => {
  let dir: string;
  let manifests: string;
  let objects: string;
  let hostDir: string;
  let agent: AgentProcess | undefined;
  let runtime: RuntimeServiceClient;
  const dapiUid = `dapi-${randomBytes(6).toString('hex')}`;

  const writeJson = (file: string, value: unknown) => fs.writeFileSync(file, JSON.stringify(value, null, 2));
  const writeConfigMap = (value: string) =>
    writeJson(path.join(objects, 'app-config.json'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'app-config', namespace: 'default' },
      data: { 'app.conf': value, 'unused.conf': 'not projected' },
    });
  const dapiPod = (labels: Record<string, string>) =>
    podManifest(
      'dapi',
      {
        containers: [container('main', sleeper, [{ name: 'podinfo', mountPath: '/etc/podinfo' }])],
        volumes: [
          {
            name: 'podinfo',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              ],
            },
          },
        ],
      },
      // A fixed UID keeps it the same pod when its labels change.
      { uid: dapiUid, labels },
    );

  /** Runs `cmd` in a running container of a pod of this node; returns stdout. */
  async function exec(pod: string, containerName: string, cmd: string): Promise<string> {
    const containers = (await runtime.listContainers({})).containers.filter(
      (c) =>
        c.labels['io.kubernetes.pod.name'] === podName(pod) &&
        c.labels['io.kubernetes.container.name'] === containerName &&
        c.state === 1,
    );
    const c = containers[0];
    if (!c) throw new Error(`no running container ${containerName} in ${podName(pod)}`);
    const res = await runtime.execSync({ containerId: c.id, cmd: ['sh', '-c', cmd], timeout: 10 });
    if (res.exitCode !== 0) {
      throw new Error(`exit ${res.exitCode}: ${Buffer.from(res.stderr).toString('utf8')}`);
    }
    return Buffer.from(res.stdout).toString('utf8');
  }

  /** Polls `cmd` in the container until its output satisfies `ok`. */
  function execUntil(pod: string, c: string, cmd: string, ok: (out: string) => boolean, timeoutMs = 60_000) {
    return waitFor(
      `${cmd} in ${pod}/${c}`,
      async () => {
        const out = await exec(pod, c, cmd);
        return ok(out) ? out : undefined;
      },
      timeoutMs,
    );
  }

  beforeAll(async () => {
    runtime = new RuntimeServiceClient({ endpoint: criEndpoint(), timeoutMs: 60_000 });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-volumes-e2e-'));
    manifests = path.join(dir, 'manifests');
    objects = path.join(dir, 'objects');
    hostDir = path.join(dir, 'host');
    for (const d of [manifests, objects, hostDir]) fs.mkdirSync(d);

    writeConfigMap('version=1');
    writeJson(path.join(objects, 'db-secret.json'), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db-secret', namespace: 'default' },
      data: { password: Buffer.from('hunter2').toString('base64') },
    });

    writeJson(
      path.join(manifests, 'shared.json'),
      podManifest('shared', {
        containers: [
          container('writer', `echo hello-from-writer > /data/msg; ${sleeper}`, [
            { name: 'data', mountPath: '/data' },
          ]),
          container('reader', sleeper, [{ name: 'data', mountPath: '/shared' }]),
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      }),
    );
    writeJson(
      path.join(manifests, 'mem.json'),
      podManifest('mem', {
        containers: [container('main', sleeper, [{ name: 'cache', mountPath: '/cache' }])],
        volumes: [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } }],
      }),
    );
    // No sizeLimit: the tmpfs is as large as the pod's memory limit (upstream
    // calculateEmptyDirMemorySize), the containers' 24Mi + 8Mi here, or the pod-level limit.
    writeJson(
      path.join(manifests, 'memlimit.json'),
      podManifest('memlimit', {
        containers: [
          {
            ...container('main', sleeper, [{ name: 'scratch', mountPath: '/scratch' }]),
            resources: { limits: { memory: '24Mi' } },
          },
          { ...container('side', sleeper, []), resources: { limits: { memory: '8Mi' } } },
        ],
        volumes: [{ name: 'scratch', emptyDir: { medium: 'Memory' } }],
      }),
    );
    writeJson(
      path.join(manifests, 'mempod.json'),
      podManifest('mempod', {
        resources: { limits: { memory: '20Mi' } },
        containers: [container('main', sleeper, [{ name: 'scratch', mountPath: '/scratch' }])],
        volumes: [{ name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }],
      }),
    );
    writeJson(
      path.join(manifests, 'cm.json'),
      podManifest('cm', {
        containers: [container('main', sleeper, [{ name: 'config', mountPath: '/etc/app' }])],
        volumes: [
          {
            name: 'config',
            configMap: {
              name: 'app-config',
              items: [{ key: 'app.conf', path: 'conf/app.conf', mode: 0o400 }],
            },
          },
        ],
      }),
    );
    writeJson(
      path.join(manifests, 'sec.json'),
      podManifest('sec', {
        containers: [container('main', sleeper, [{ name: 'creds', mountPath: '/etc/creds' }])],
        volumes: [{ name: 'creds', secret: { secretName: 'db-secret' } }],
      }),
    );
    writeJson(path.join(manifests, 'dapi.json'), dapiPod({ app: 'shop', tier: 'front' }));
    writeJson(
      path.join(manifests, 'hostpath.json'),
      podManifest('hostpath', {
        containers: [
          container('main', `echo from-container >> /host/created.log; ${sleeper}`, [
            { name: 'log', mountPath: '/host/created.log' },
          ]),
        ],
        volumes: [
          { name: 'log', hostPath: { path: path.join(hostDir, 'created.log'), type: 'FileOrCreate' } },
        ],
      }),
    );

    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: ['--object-dir', objects, '--allow-static-pod-api-references', '--sync-frequency', '3s'],
    });
    await waitFor(
      'every volume pod Running',
      async () => {
        const pods = await agent!.pods();
        const names = ['shared', 'mem', 'memlimit', 'mempod', 'cm', 'sec', 'dapi', 'hostpath'];
        return names.every((n) => podNamed(pods, podName(n))?.status?.phase === 'Running') ? pods : undefined;
      },
      120_000,
    );
  });

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    runtime?.close();
    // A stopped agent leaves tmpfs mounts of running pods in place, as the kubelet does.
    const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    for (const line of mounts.split('\n')) {
      const mountPoint = line.split(' ')[4];
      if (mountPoint?.startsWith(dir)) {
        await import('node:child_process').then(({ execFileSync }) => execFileSync('umount', [mountPoint]));
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('shares an emptyDir between two containers', async () => {
    expect(await execUntil('shared', 'reader', 'cat /shared/msg 2>/dev/null || true', (o) => o !== '')).toBe(
      'hello-from-writer\n',
    );
  });

  it('mounts an emptyDir with medium Memory as a tmpfs', async () => {
    const mounts = await exec('mem', 'main', 'cat /proc/mounts');
    const line = mounts.split('\n').find((l) => l.split(' ')[1] === '/cache');
    expect(line?.split(' ')[2]).toBe('tmpfs');
    expect(line).toMatch(/size=8192k/);
  });

  it("sizes a memory emptyDir without sizeLimit by the containers' memory limits", async () => {
    const mounts = await exec('memlimit', 'main', 'cat /proc/mounts');
    const line = mounts.split('\n').find((l) => l.split(' ')[1] === '/scratch');
    expect(line?.split(' ')[2]).toBe('tmpfs');
    expect(line).toMatch(/size=32768k/);
  });

  it('sizes a memory emptyDir by the pod-level memory limit when sizeLimit is larger', async () => {
    const mounts = await exec('mempod', 'main', 'cat /proc/mounts');
    const line = mounts.split('\n').find((l) => l.split(' ')[1] === '/scratch');
    expect(line?.split(' ')[2]).toBe('tmpfs');
    expect(line).toMatch(/size=20480k/);
  });

  it('projects configMap items with mode 0400, and only those items', async () => {
    expect(await exec('cm', 'main', 'cat /etc/app/conf/app.conf')).toBe('version=1');
    expect((await exec('cm', 'main', 'stat -L -c %a /etc/app/conf/app.conf')).trim()).toBe('400');
    expect((await exec('cm', 'main', 'ls /etc/app')).trim()).toBe('conf');
  });

  it('brings a configMap update into the running pod', async () => {
    const containerBefore = (await runtime.listContainers({})).containers.find(
      (c) => c.labels['io.kubernetes.pod.name'] === podName('cm') && c.state === 1,
    )?.id;
    writeConfigMap('version=2');
    await execUntil('cm', 'main', 'cat /etc/app/conf/app.conf', (o) => o === 'version=2', 90_000);
    // The same container saw it: no restart was needed.
    const containerAfter = (await runtime.listContainers({})).containers.find(
      (c) => c.labels['io.kubernetes.pod.name'] === podName('cm') && c.state === 1,
    )?.id;
    expect(containerAfter).toBe(containerBefore);
  });

  it('mounts a secret volume on tmpfs', async () => {
    expect(await exec('sec', 'main', 'cat /etc/creds/password')).toBe('hunter2');
    const line = (await exec('sec', 'main', 'cat /proc/mounts'))
      .split('\n')
      .find((l) => l.split(' ')[1] === '/etc/creds');
    expect(line?.split(' ')[2]).toBe('tmpfs');
    expect(line?.split(' ')[3]).toMatch(/^ro\b/);
  });

  it('updates a downwardAPI labels file when the pod labels change', async () => {
    expect(await exec('dapi', 'main', 'cat /etc/podinfo/labels')).toBe('app="shop"\ntier="front"');
    expect(await exec('dapi', 'main', 'cat /etc/podinfo/name')).toBe(podName('dapi'));
    writeJson(path.join(manifests, 'dapi.json'), dapiPod({ app: 'shop', tier: 'back', version: '2' }));
    await execUntil(
      'dapi',
      'main',
      'cat /etc/podinfo/labels',
      (o) => o === 'app="shop"\ntier="back"\nversion="2"',
      90_000,
    );
    const pods: Pod[] = await agent!.pods();
    expect(podNamed(pods, podName('dapi'))?.metadata?.uid).toBe(dapiUid);
  });

  it('after an agent SIGKILL and restart, volumes are neither lost nor mounted twice', async () => {
    const root = path.join(dir, 'root');
    const ourMounts = () =>
      fs
        .readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[4])
        .filter((m): m is string => m?.startsWith(root) === true)
        .sort();
    const before = ourMounts();
    // The host side of each volume: the very same directories must survive the restart, since a
    // running container's bind mount keeps pointing at them.
    const uidOf = async (name: string) => podNamed(await agent!.pods(), podName(name))?.metadata?.uid ?? '';
    const hostDirs = {
      config: path.join(root, 'pods', await uidOf('cm'), 'volumes/kubernetes.io~configmap/config'),
      cache: path.join(root, 'pods', await uidOf('mem'), 'volumes/kubernetes.io~empty-dir/cache'),
      data: path.join(root, 'pods', await uidOf('shared'), 'volumes/kubernetes.io~empty-dir/data'),
    };
    const inodes = Object.fromEntries(Object.entries(hostDirs).map(([k, d]) => [k, fs.statSync(d).ino]));
    // The Memory emptyDir and the secret: one tmpfs each.
    expect(before.filter((m) => m.includes('kubernetes.io~empty-dir/cache'))).toHaveLength(1);
    expect(before.filter((m) => m.includes('kubernetes.io~secret/creds'))).toHaveLength(1);
    await exec('mem', 'main', 'echo kept > /cache/marker');
    await agent!.kill();
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: root,
      args: ['--object-dir', objects, '--allow-static-pod-api-references', '--sync-frequency', '3s'],
    });
    await waitFor(
      'the volume pods Running again',
      async () => {
        const pods = await agent!.pods();
        return ['mem', 'sec', 'cm'].every((n) => podNamed(pods, podName(n))?.status?.phase === 'Running')
          ? true
          : undefined;
      },
      120_000,
    );
    // Let several sync and reconcile rounds pass.
    await new Promise((r) => setTimeout(r, 5000));
    expect(ourMounts()).toEqual(before);
    expect(Object.fromEntries(Object.entries(hostDirs).map(([k, d]) => [k, fs.statSync(d).ino]))).toEqual(
      inodes,
    );
    expect(fs.readFileSync(path.join(hostDirs.cache, 'marker'), 'utf8')).toBe('kept\n');
    expect(fs.readFileSync(path.join(hostDirs.data, 'msg'), 'utf8')).toBe('hello-from-writer\n');
    expect(await exec('mem', 'main', 'cat /cache/marker')).toBe('kept\n');
    expect(await exec('sec', 'main', 'cat /etc/creds/password')).toBe('hunter2');
    // Updates still flow after the restart.
    writeConfigMap('version=3');
    await execUntil('cm', 'main', 'cat /etc/app/conf/app.conf', (o) => o === 'version=3', 90_000);
  });

  it('creates a hostPath FileOrCreate file the container writes to', async () => {
    const file = path.join(hostDir, 'created.log');
    await waitFor('the container line on the host', async () =>
      fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes('from-container') ? true : undefined,
    );
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('644');
  });
});
