import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { CommandRunner, Pod } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { SecurityProfile_ProfileType } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type EnvContext, makeEnvironmentVariables } from '../src/env.js';
import { type ContainerConfigContext, generateContainerConfig } from '../src/index.js';
import { HandlerRunner } from '../src/lifecycle.js';
import { calcRestartCountByLogDir } from '../src/logs.js';
import { getContainerOOMScoreAdjust } from '../src/qos.js';
import { calculateLinuxResources } from '../src/resources.js';
import { TerminationOrdering } from '../src/termination-order.js';
import { RecordingSubpather } from './fake-subpather.js';

// Cases checked against upstream's kuberuntime, kubelet_pods.go, lifecycle/handlers.go and
// kuberuntime_termination_order.go.

const envCtx = (podIPs: string[] = ['10.1.0.5']): EnvContext => ({
  nodeName: 'node-a',
  podIP: podIPs[0] ?? '',
  podIPs,
  hostIPs: ['192.168.1.2'],
  nodeAllocatable: { cpu: '4', memory: '8Gi' },
});

const pod: Pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { containers: [] },
};

let dir: string;
let base: ContainerConfigContext;
let subpather: RecordingSubpather;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-ccu-'));
  fs.mkdirSync(path.join(dir, 'vol'), { mode: 0o750 });
  fs.chmodSync(path.join(dir, 'vol'), 0o750);
  subpather = new RecordingSubpather();
  base = {
    containerType: 'container',
    restartCount: 0,
    imageRef: 'sha256:abc',
    imageUser: { username: '' },
    env: envCtx(),
    volumes: new Map([['data', { hostPath: path.join(dir, 'vol'), readOnly: false }]]),
    podDir: path.join(dir, 'root', 'pods', 'u1'),
    subpather,
    podLogsRootDirectory: path.join(dir, 'logs'),
    memoryCapacity: 2 ** 30,
  };
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('calculateLinuxResources (upstream calculateLinuxResources)', () => {
  it('takes shares from an explicit zero CPU request, not from the limit', () => {
    // Only a missing request falls back to the limit; a request of 0 gives the minimum shares.
    expect(
      calculateLinuxResources({ name: 'c', resources: { requests: { cpu: '0' }, limits: { cpu: '500m' } } })
        .cpuShares,
    ).toBe(2);
  });
});

describe('makeMounts (upstream kubelet_pods.go)', () => {
  it('expands subPathExpr and refuses a reference to a missing or empty variable', async () => {
    const c = {
      name: 'c',
      env: [
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'EMPTY', value: '' },
      ],
    };
    const { config } = await generateContainerConfig(
      pod,
      { ...c, volumeMounts: [{ name: 'data', mountPath: '/d', subPathExpr: '$(POD)/logs' }] },
      base,
    );
    // The expanded subPath goes to the subpather like a subPath; the bind target is mounted.
    expect(subpather.prepared[0]?.path).toBe(path.join(dir, 'vol', 'p/logs'));
    expect(config.mounts?.[0]?.hostPath).toBe(path.join(base.podDir, 'volume-subpaths/data/c/0'));
    // Upstream ExpandContainerVolumeMounts: every missing or empty name, sorted, in one error.
    await expect(
      generateContainerConfig(
        pod,
        { ...c, volumeMounts: [{ name: 'data', mountPath: '/d', subPathExpr: '$(NOPE)/$(EMPTY)' }] },
        base,
      ),
    ).rejects.toThrow('missing value for EMPTY, NOPE');
  });

  it('binds each subPath through the subpather, never joining it as text', async () => {
    fs.mkdirSync(path.join(dir, 'vol', 'exists'));
    const { config } = await generateContainerConfig(
      pod,
      {
        name: 'c',
        volumeMounts: [
          { name: 'data', mountPath: '/whole' },
          { name: 'data', mountPath: '/new', subPath: 'a/new' },
          { name: 'data', mountPath: '/old', subPath: 'exists' },
        ],
      },
      base,
    );
    // Only the missing one is made, with the volume's mode (upstream SafeMakeDir).
    expect(subpather.made).toEqual([{ subdir: 'a/new', base: path.join(dir, 'vol'), perm: 0o750 }]);
    expect(subpather.prepared).toEqual([
      {
        volumeMountIndex: 1,
        path: path.join(dir, 'vol', 'a/new'),
        volumeName: 'data',
        volumePath: path.join(dir, 'vol'),
        podDir: base.podDir,
        containerName: 'c',
      },
      expect.objectContaining({ volumeMountIndex: 2, path: path.join(dir, 'vol', 'exists') }),
    ]);
    expect(config.mounts?.slice(0, 3).map((m) => m.hostPath)).toEqual([
      path.join(dir, 'vol'),
      path.join(base.podDir, 'volume-subpaths/data/c/1'),
      path.join(base.podDir, 'volume-subpaths/data/c/2'),
    ]);
  });

  it('fails with upstream’s messages, which tell the pod nothing of the host', async () => {
    const c = (subPath: string) => ({
      name: 'c',
      volumeMounts: [{ name: 'data', mountPath: '/d', subPath }],
    });
    await expect(generateContainerConfig(pod, c('/etc'), base)).rejects.toThrow(
      'error SubPath `/etc` must not be an absolute path',
    );
    await expect(generateContainerConfig(pod, c('a/../../x'), base)).rejects.toThrow(
      "unable to provision SubPath `a/../../x`: must not contain '..'",
    );
    subpather.prepareError = new Error('subpath "/" not within volume path "/var/lib/x"');
    const err = await generateContainerConfig(pod, c('escape'), base).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'CreateContainerConfigError',
      message: 'failed to prepare subPath for volumeMount "data" of container "c"',
    });
    // Without a subpather nothing is mounted unchecked.
    const { subpather: _none, ...unsafe } = base;
    await expect(generateContainerConfig(pod, c('x'), unsafe)).rejects.toThrow(
      'failed to prepare subPath for volumeMount "data" of container "c"',
    );
  });

  it('makes a relative mountPath absolute', async () => {
    const { config } = await generateContainerConfig(
      pod,
      { name: 'c', volumeMounts: [{ name: 'data', mountPath: 'data/x' }] },
      base,
    );
    expect(config.mounts?.[0]?.containerPath).toBe('/data/x');
  });

  it('rewrites the managed /etc/hosts on every container start (upstream ensureHostsFile)', async () => {
    const ctx = { ...base, etcHosts: { podDir: base.podDir } };
    await generateContainerConfig(pod, { name: 'c' }, ctx);
    const { config } = await generateContainerConfig(
      pod,
      { name: 'c' },
      { ...ctx, env: envCtx(['10.9.9.9']) },
    );
    const hosts = config.mounts?.find((m) => m.containerPath === '/etc/hosts');
    const content = fs.readFileSync(hosts!.hostPath!, 'utf8');
    expect(content).toContain('10.9.9.9\tp\n');
    expect(content).not.toContain('10.1.0.5');
  });
});

describe('security context (upstream determineEffectiveSecurityContext)', () => {
  it('keeps the default masked and read-only paths for privileged containers; only Unmasked clears them', async () => {
    const priv = await generateContainerConfig(
      pod,
      { name: 'c', securityContext: { privileged: true } },
      base,
    );
    expect(priv.config.linux?.securityContext?.privileged).toBe(true);
    expect(priv.config.linux?.securityContext?.maskedPaths).toContain('/proc/kcore');
    expect(priv.config.linux?.securityContext?.readonlyPaths).toContain('/proc/sys');
    const unmasked = await generateContainerConfig(
      pod,
      { name: 'c', securityContext: { procMount: 'Unmasked' } },
      base,
    );
    expect(unmasked.config.linux?.securityContext?.maskedPaths).toEqual([]);
    expect(unmasked.config.linux?.securityContext?.readonlyPaths).toEqual([]);
  });

  it('resolves a Localhost seccomp profile under <root>/seccomp and requires its name', async () => {
    const { config } = await generateContainerConfig(
      pod,
      {
        name: 'c',
        securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p/audit.json' } },
      },
      base,
    );
    expect(config.linux?.securityContext?.seccomp).toEqual({
      profileType: SecurityProfile_ProfileType.Localhost,
      localhostRef: path.join(dir, 'root', 'seccomp', 'p', 'audit.json'),
    });
    await expect(
      generateContainerConfig(
        { ...pod, spec: { containers: [], securityContext: { seccompProfile: { type: 'Localhost' } } } },
        { name: 'c' },
        base,
      ),
    ).rejects.toThrow('localhostProfile must be set if seccompProfile type is Localhost');
  });
});

describe('TerminationOrdering (upstream newTerminationOrdering)', () => {
  it('a sidecar waits for the next sidecar only, not for later ones behind a stopped one', async () => {
    const clock = new FakeClock();
    const sidecar = (name: string) => ({ name, restartPolicy: 'Always' });
    const p: Pod = {
      metadata: { name: 'p' },
      spec: { initContainers: [sidecar('a'), sidecar('b'), sidecar('c')], containers: [{ name: 'main' }] },
    };
    // b is not running: a's only sidecar predecessor is done, so a need not wait for c.
    const ordering = new TerminationOrdering(p, ['a', 'c'], clock);
    let waited: number | undefined;
    void ordering.waitForTurn('a', 30).then((s) => {
      waited = s;
    });
    await new Promise((r) => setImmediate(r));
    expect(waited).toBe(0);
  });
});

describe('HandlerRunner (upstream lifecycle/handlers.go)', () => {
  const target = (clockPod = pod) => ({
    containerId: { type: 'containerd', id: 'cid' },
    pod: clockPod,
    container: { name: 'c' },
    podIP: '10.1.0.5',
  });

  it('reports a failed exec hook as upstream: the command as a list, stderr in the error, all output quoted', async () => {
    const runner: CommandRunner = {
      runInContainer: async () => ({
        exitCode: 3,
        stdout: Buffer.from('out\n'),
        stderr: Buffer.from('bad'),
      }),
    };
    const hr = new HandlerRunner({ commandRunner: runner, clock: new FakeClock() });
    await expect(hr.run(target(), { exec: { command: ['sh', '-c', 'exit 3'] } })).rejects.toThrow(
      `Exec lifecycle hook ([sh -c exit 3]) for Container "c" in Pod "p_ns(u1)" failed - error: command 'sh -c exit 3' exited with 3: bad, message: "out\\nbad"`,
    );
  });

  it('a sleep hook cut short fails (upstream runSleepHandler)', async () => {
    const clock = new FakeClock();
    const hr = new HandlerRunner({
      commandRunner: {
        runInContainer: async () => ({ exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array() }),
      },
      clock,
    });
    const controller = new AbortController();
    const run = hr.run({ ...target(), signal: controller.signal }, { sleep: { seconds: 5 } });
    controller.abort();
    await expect(run).rejects.toThrow(
      'Sleep lifecycle hook (5) for Container "c" in Pod "p_ns(u1)" failed - error: container terminated before sleep hook finished',
    );
    // Run to its end, it succeeds.
    const done = hr.run(target(), { sleep: { seconds: 5 } });
    await clock.tick(5000);
    await expect(done).resolves.toBeUndefined();
  });

  it('sends Accept: */* and the lifecycle user agent unless the hook sets them (upstream newProbeRequest)', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const hr = new HandlerRunner({
        commandRunner: {
          runInContainer: async () => ({ exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array() }),
        },
        clock: new FakeClock(),
      });
      await hr.run(target(), { httpGet: { host: '127.0.0.1', port, path: '/a' } });
      await hr.run(target(), {
        httpGet: {
          host: '127.0.0.1',
          port,
          path: '/b',
          httpHeaders: [{ name: 'accept', value: 'text/plain' }],
        },
      });
      expect(seen[0]).toMatchObject({ accept: '*/*', 'user-agent': 'kube-lifecycle/1.34' });
      expect(seen[1]?.accept).toBe('text/plain');
    } finally {
      server.close();
    }
  });
});

describe('calcRestartCountByLogDir (upstream)', () => {
  it('counts rotated logs with timestamp suffixes and skips directories', async () => {
    const logs = path.join(dir, 'c');
    fs.mkdirSync(logs);
    fs.writeFileSync(path.join(logs, '0.log'), '');
    fs.writeFileSync(path.join(logs, '3.log.20260101-101010'), '');
    fs.writeFileSync(path.join(logs, '4.log.20260101-101010.gz'), '');
    fs.mkdirSync(path.join(logs, '9.log'));
    expect(await calcRestartCountByLogDir(logs)).toBe(5);
  });
});

describe('resourceFieldRef (upstream defaultPodLimitsForDownwardAPI, ExtractContainerResourceValue)', () => {
  it('takes node allocatable for a zero limit, and 0 for hugepages without a limit', async () => {
    const env = await makeEnvironmentVariables(
      pod,
      {
        name: 'c',
        resources: { limits: { cpu: '0', 'hugepages-2Mi': '4Mi' } },
        env: [
          { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
          {
            name: 'HP2',
            valueFrom: { resourceFieldRef: { resource: 'limits.hugepages-2Mi', divisor: '1Mi' } },
          },
          { name: 'HP1G', valueFrom: { resourceFieldRef: { resource: 'limits.hugepages-1Gi' } } },
        ],
      },
      envCtx(),
    );
    expect(Object.fromEntries(env)).toEqual({ CPU: '4', HP2: '4', HP1G: '0' });
  });
});

describe('getContainerOOMScoreAdjust (upstream TestGetContainerOOMScoreAdjust)', () => {
  it('gives node-critical pods the guaranteed score whatever their QoS; other critical pods keep theirs', () => {
    const c = { name: 'c' };
    const critical = (priorityClassName: string): Pod => ({
      metadata: { name: 'p', namespace: 'kube-system', uid: 'u' },
      spec: { priority: 2000001000, priorityClassName, containers: [c] },
    });
    expect(getContainerOOMScoreAdjust(critical('system-node-critical'), c, 2 ** 30)).toBe(-997);
    expect(getContainerOOMScoreAdjust(critical('system-cluster-critical'), c, 2 ** 30)).toBe(1000);
  });
});
