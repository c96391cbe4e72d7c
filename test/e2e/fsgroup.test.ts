// End to end: volume ownership by fsGroup through `kubelet-kit run` on the private containerd
// (upstream pkg/volume/volume_linux.go SetVolumeOwnership, as emptyDir and the API volume plugins
// apply it).
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/fsgroup.test.ts
// Pods run as uid 1000 with fsGroup 4004; their ConfigMap comes from --object-dir.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

const nodeName = `fsg-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";
const fsGroup = 4004;

function podManifest(name: string, securityContext: Record<string, unknown>, withMemory: boolean) {
  const mounts = [
    { name: 'scratch', mountPath: '/scratch' },
    { name: 'config', mountPath: '/etc/app' },
    { name: 'podinfo', mountPath: '/etc/podinfo' },
    ...(withMemory ? [{ name: 'mem', mountPath: '/mem' }] : []),
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      securityContext: { runAsUser: 1000, fsGroup, ...securityContext },
      containers: [
        {
          name: 'main',
          image: busybox,
          imagePullPolicy: 'Never',
          command: ['sh', '-c', sleeper],
          volumeMounts: mounts,
        },
      ],
      volumes: [
        { name: 'scratch', emptyDir: {} },
        // 0400 files: only the group bit the ownership change adds lets uid 1000 read them.
        { name: 'config', configMap: { name: 'fsg-config', defaultMode: 0o400 } },
        {
          name: 'podinfo',
          downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] },
        },
        ...(withMemory ? [{ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } }] : []),
      ],
    },
  };
}

describe('volume ownership by fsGroup through the agent on containerd', () => {
  let dir: string;
  let objects: string;
  let root: string;
  let agent: AgentProcess | undefined;
  let runtime: RuntimeServiceClient;

  const writeJson = (file: string, value: unknown) => fs.writeFileSync(file, JSON.stringify(value, null, 2));
  const writeConfigMap = (data: Record<string, string>) =>
    writeJson(path.join(objects, 'fsg-config.json'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'fsg-config', namespace: 'default' },
      data,
    });

  /** Runs `cmd` in the running container of a pod of this node; returns stdout. */
  async function exec(pod: string, cmd: string): Promise<string> {
    const c = (await runtime.listContainers({})).containers.find(
      (x) => x.labels['io.kubernetes.pod.name'] === podName(pod) && x.state === 1,
    );
    if (!c) throw new Error(`no running container in ${podName(pod)}`);
    const res = await runtime.execSync({ containerId: c.id, cmd: ['sh', '-c', cmd], timeout: 10 });
    if (res.exitCode !== 0) {
      throw new Error(`${cmd}: exit ${res.exitCode}: ${Buffer.from(res.stderr).toString('utf8')}`);
    }
    return Buffer.from(res.stdout).toString('utf8');
  }

  /** The host directory of one of a pod's volumes. */
  async function hostVolumeDir(pod: string, plugin: string, volume: string): Promise<string> {
    const uid = podNamed(await agent!.pods(), podName(pod))?.metadata?.uid ?? '';
    return path.join(root, 'pods', uid, 'volumes', plugin, volume);
  }

  beforeAll(async () => {
    runtime = new RuntimeServiceClient({ endpoint: criEndpoint(), timeoutMs: 60_000 });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-fsgroup-e2e-'));
    const manifests = path.join(dir, 'manifests');
    objects = path.join(dir, 'objects');
    root = path.join(dir, 'root');
    for (const d of [manifests, objects]) fs.mkdirSync(d);
    writeConfigMap({ 'app.conf': 'version=1' });
    writeJson(path.join(manifests, 'fsg.json'), podManifest('fsg', {}, true));
    writeJson(
      path.join(manifests, 'fsg-orm.json'),
      podManifest('fsg-orm', { fsGroupChangePolicy: 'OnRootMismatch' }, false),
    );
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: root,
      args: ['--object-dir', objects, '--allow-static-pod-api-references', '--sync-frequency', '3s'],
    });
    await waitFor(
      'both fsGroup pods Running',
      async () => {
        const pods = await agent!.pods();
        return ['fsg', 'fsg-orm'].every((n) => podNamed(pods, podName(n))?.status?.phase === 'Running')
          ? true
          : undefined;
      },
      120_000,
    );
  });

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    runtime?.close();
    // A stopped agent leaves the tmpfs mounts of running pods in place, as the kubelet does.
    for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const mountPoint = line.split(' ')[4];
      if (mountPoint?.startsWith(dir)) execFileSync('umount', [mountPoint]);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each(['fsg', 'fsg-orm'])(
    '%s: the container runs as uid 1000 with the fsGroup among its groups',
    async (pod) => {
      expect((await exec(pod, 'id -u')).trim()).toBe('1000');
      expect((await exec(pod, 'id -G')).trim().split(' ')).toContain(String(fsGroup));
    },
  );

  it.each(['fsg', 'fsg-orm'])(
    '%s: the emptyDir is drwxrwsrwx with group 4004, and a file uid 1000 makes there gets the group',
    async (pod) => {
      expect((await exec(pod, 'stat -c "%A %u %g" /scratch')).trim()).toBe(`drwxrwsrwx 0 ${fsGroup}`);
      expect((await exec(pod, 'ls -lnd /scratch')).split(/\s+/).slice(0, 4)).toEqual([
        'drwxrwsrwx',
        expect.any(String),
        '0',
        String(fsGroup),
      ]);
      await exec(pod, 'echo hi > /scratch/made-by-1000 && mkdir /scratch/sub');
      expect((await exec(pod, 'stat -c "%u %g" /scratch/made-by-1000')).trim()).toBe(`1000 ${fsGroup}`);
      // A directory made there inherits the setgid bit too.
      expect((await exec(pod, 'stat -c "%A %u %g" /scratch/sub')).trim()).toMatch(
        new RegExp(`^d.....s... 1000 ${fsGroup}$`),
      );
      // The host side, as the agent left it.
      const host = fs.statSync(await hostVolumeDir(pod, 'kubernetes.io~empty-dir', 'scratch'));
      expect([host.gid, (host.mode & 0o7777).toString(8)]).toEqual([fsGroup, '2777']);
    },
  );

  it('a memory emptyDir (tmpfs, sticky) gets the group and setgid: drwxrwsrwt', async () => {
    expect((await exec('fsg', 'stat -c "%A %g" /mem')).trim()).toBe(`drwxrwsrwt ${fsGroup}`);
    await exec('fsg', 'touch /mem/x');
    expect((await exec('fsg', 'stat -c "%u %g" /mem/x')).trim()).toBe(`1000 ${fsGroup}`);
  });

  it.each(['fsg', 'fsg-orm'])(
    '%s: configMap files are 0440 with group 4004, so uid 1000 reads them; downwardAPI files too',
    async (pod) => {
      const listing = await exec(pod, 'ls -lnL /etc/app');
      const line = listing.split('\n').find((l) => l.endsWith(' app.conf'));
      expect(line?.split(/\s+/).slice(0, 4)).toEqual([
        '-r--r-----',
        expect.any(String),
        '0',
        String(fsGroup),
      ]);
      expect(await exec(pod, 'cat /etc/app/app.conf')).toBe('version=1');
      // The data directory is r-x for the group, with setgid.
      expect((await exec(pod, 'stat -c "%A %g" /etc/app/..data/')).trim()).toBe(`drwxr-sr-x ${fsGroup}`);
      expect((await exec(pod, 'stat -L -c "%a %g" /etc/podinfo/name')).trim()).toBe(`644 ${fsGroup}`);
      expect(await exec(pod, 'cat /etc/podinfo/name')).toBe(podName(pod));
    },
  );

  it('a ConfigMap update brings new files with the group (OnRootMismatch too), and a symlink planted in the volume does not carry the walk to its host target', async () => {
    // The attack: links in a configMap volume's host directory to a host file and a host
    // directory. The ownership walk after the update visits them; it must not chown, chmod or
    // enter what they point at.
    const hostFile = path.join(dir, 'host-shadow');
    const hostDir = path.join(dir, 'host-etc');
    fs.writeFileSync(hostFile, 'secret');
    fs.chmodSync(hostFile, 0o600);
    fs.mkdirSync(hostDir, { mode: 0o700 });
    fs.writeFileSync(path.join(hostDir, 'passwd'), 'root:x:0:0');
    fs.chmodSync(path.join(hostDir, 'passwd'), 0o600);
    const snapshot = () =>
      [hostFile, hostDir, path.join(hostDir, 'passwd')].map((p) => {
        const st = fs.lstatSync(p);
        return `${p} ${st.uid}:${st.gid} ${(st.mode & 0o7777).toString(8)}`;
      });
    const before = snapshot();
    const configDir = await hostVolumeDir('fsg', 'kubernetes.io~configmap', 'config');
    for (const [target, name] of [
      [hostFile, 'planted-file'],
      [hostDir, 'planted-dir'],
    ] as const) {
      fs.symlinkSync(target, path.join(configDir, name));
      // Made in a setgid directory, the links start with its group; root's shows the walk ran.
      fs.lchownSync(path.join(configDir, name), 0, 0);
    }

    writeConfigMap({ 'app.conf': 'version=2', 'extra.conf': 'new' });
    for (const pod of ['fsg', 'fsg-orm']) {
      // Readable by uid 1000 only through the group: the new file got it.
      await waitFor(
        `extra.conf readable in ${pod}`,
        async () => {
          try {
            return (await exec(pod, 'cat /etc/app/extra.conf')) === 'new' ? true : undefined;
          } catch {
            return undefined;
          }
        },
        90_000,
      );
      expect((await exec(pod, 'stat -L -c "%a %g" /etc/app/extra.conf')).trim()).toBe(`440 ${fsGroup}`);
      expect((await exec(pod, 'stat -L -c "%a %g" /etc/app/app.conf')).trim()).toBe(`440 ${fsGroup}`);
      expect(await exec(pod, 'cat /etc/app/app.conf')).toBe('version=2');
    }
    expect(snapshot()).toEqual(before);
    // The walk did visit the planted links: they were regrouped themselves.
    expect(fs.lstatSync(path.join(configDir, 'planted-file')).gid).toBe(fsGroup);
    expect(fs.lstatSync(path.join(configDir, 'planted-dir')).gid).toBe(fsGroup);
  });
});
