import { ContainerState } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { computePodActions, hashContainer } from '../src/index.js';
import { type Harness, harness, makePod } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

const byName = (status: Awaited<ReturnType<Harness['status']>>, name: string) =>
  status.containerStatuses.filter((c) => c.name === name);

describe('syncPod', () => {
  it('creates the sandbox and starts every container of a new pod, in upstream order', async () => {
    const pod = makePod({
      containers: [
        { name: 'a', image: 'busybox' },
        { name: 'b', image: 'busybox' },
      ],
    });
    const result = await h.sync(pod);
    expect(result.syncError).toBeUndefined();
    expect(result.syncResults.map((r) => [r.action, r.target, r.error])).toEqual([
      ['KillPodSandbox', pod.metadata!.uid, undefined],
      ['CreatePodSandbox', `${pod.metadata!.name}_default(${pod.metadata!.uid})`, undefined],
      ['StartContainer', 'a', undefined],
      ['StartContainer', 'b', undefined],
    ]);
    const methods = h.server
      .calls()
      .map((c) => c.method)
      .filter((m) => !['Version', 'ListPodSandbox', 'ListContainers', 'ContainerStatus'].includes(m));
    expect(methods).toEqual([
      'RunPodSandbox',
      'PodSandboxStatus',
      // An untagged image defaults to pull policy Always.
      'ImageStatus',
      'PullImage',
      'ImageStatus',
      'CreateContainer',
      'StartContainer',
      'ImageStatus',
      'PullImage',
      'ImageStatus',
      'CreateContainer',
      'StartContainer',
    ]);
    const status = await h.status(pod);
    expect(status.sandboxStatuses).toHaveLength(1);
    expect(status.sandboxStatuses[0]).toMatchObject({ state: 'ready', attempt: 0 });
    expect(status.ips).toHaveLength(1);
    expect(status.containerStatuses.map((c) => [c.name, c.state, c.restartCount, c.hash]).sort()).toEqual([
      ['a', 'running', 0, hashContainer({ name: 'a', image: 'busybox' })],
      ['b', 'running', 0, hashContainer({ name: 'b', image: 'busybox' })],
    ]);
    // Nothing more to do.
    h.server.clearCalls();
    const again = await h.sync(pod);
    expect(again.syncResults).toEqual([]);
    expect(h.server.calls('CreateContainer')).toHaveLength(0);
  });

  it('builds the sandbox and container configs with labels, annotations, log paths and resources', async () => {
    const pod = makePod(
      {
        terminationGracePeriodSeconds: 7,
        containers: [
          {
            name: 'app',
            image: 'busybox',
            command: ['sh', '-c', 'echo $(GREETING) $$(GREETING) $(MISSING)'],
            env: [
              { name: 'NAME', value: 'world' },
              { name: 'GREETING', value: 'hello $(NAME)' },
              { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
            ],
            ports: [{ containerPort: 80, hostPort: 8080 }],
            resources: { requests: { cpu: '250m' }, limits: { cpu: '500m', memory: '64Mi' } },
            securityContext: {
              runAsUser: 1000,
              readOnlyRootFilesystem: true,
              allowPrivilegeEscalation: false,
            },
          },
        ],
      },
      { labels: { app: 'web' }, annotations: { note: 'x' } },
    );
    await h.sync(pod);
    const run = h.server.calls<{ config: Record<string, unknown> }>('RunPodSandbox')[0]!.request
      .config as never as {
      metadata: unknown;
      labels: Record<string, string>;
      annotations: Record<string, string>;
      hostname: string;
      logDirectory: string;
      portMappings: unknown[];
    };
    expect(run.metadata).toEqual({
      name: pod.metadata!.name,
      namespace: 'default',
      uid: pod.metadata!.uid,
      attempt: 0,
    });
    expect(run.labels).toEqual({
      app: 'web',
      'io.kubernetes.pod.name': pod.metadata!.name,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': pod.metadata!.uid,
    });
    expect(run.annotations).toEqual({ note: 'x' });
    expect(run.hostname).toBe(pod.metadata!.name);
    expect(run.logDirectory).toBe(`${h.dir}/logs/default_${pod.metadata!.name}_${pod.metadata!.uid}`);
    expect(run.portMappings).toEqual([{ protocol: 0, containerPort: 80, hostPort: 8080, hostIp: '' }]);
    const create = h.server.calls<{ config: never }>('CreateContainer')[0]!.request.config as {
      command: string[];
      envs: { key: string; value: string }[];
      logPath: string;
      labels: Record<string, string>;
      annotations: Record<string, string>;
      linux: { resources: Record<string, number>; securityContext: Record<string, unknown> };
      mounts: { containerPath: string; hostPath: string }[];
    };
    expect(create.command).toEqual(['sh', '-c', 'echo hello world $(GREETING) $(MISSING)']);
    const env = Object.fromEntries(create.envs.map((e) => [e.key, e.value]));
    const status = await h.status(pod);
    expect(env).toEqual({
      NAME: 'world',
      GREETING: 'hello world',
      POD: pod.metadata!.name,
      NODE: 'node-1',
      IP: status.ips[0],
      MEM: '64',
    });
    expect(create.logPath).toBe('app/0.log');
    expect(create.labels).toEqual({
      'io.kubernetes.pod.name': pod.metadata!.name,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': pod.metadata!.uid,
      'io.kubernetes.container.name': 'app',
    });
    expect(create.annotations).toMatchObject({
      'io.kubernetes.container.hash': hashContainer(pod.spec!.containers[0]!),
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '7',
      'io.kubernetes.container.ports': JSON.stringify([{ containerPort: 80, hostPort: 8080 }]),
    });
    expect(create.linux.resources).toMatchObject({
      cpuShares: 256,
      cpuQuota: 50000,
      cpuPeriod: 100000,
      memoryLimitInBytes: 64 * 2 ** 20,
    });
    // Burstable, requesting 64Mi (its limit) of 8Gi.
    expect(create.linux.resources.oomScoreAdj).toBe(1000 - Math.trunc((1000 * 64 * 2 ** 20) / (8 * 2 ** 30)));
    expect(create.linux.securityContext).toMatchObject({
      runAsUser: { value: 1000 },
      readonlyRootfs: true,
      noNewPrivs: true,
    });
    const tm = create.mounts.find((m) => m.containerPath === '/dev/termination-log')!;
    expect(tm.hostPath.startsWith(`${h.dir}/root/pods/${pod.metadata!.uid}/containers/app/`)).toBe(true);
  });

  it('runs init containers one at a time, then the main containers', async () => {
    const pod = makePod({
      initContainers: [
        { name: 'i1', image: 'busybox' },
        { name: 'i2', image: 'busybox' },
      ],
      containers: [{ name: 'm', image: 'busybox' }],
    });
    const started = async () =>
      (await h.sync(pod)).syncResults.filter((r) => r.action === 'StartContainer').map((r) => r.target);
    expect(await started()).toEqual(['i1']);
    expect(await started()).toEqual([]); // i1 still runs
    h.server.exitContainer(byName(await h.status(pod), 'i1')[0]!.id.id, 0);
    expect(await started()).toEqual(['i2']);
    h.server.exitContainer(byName(await h.status(pod), 'i2')[0]!.id.id, 0);
    expect(await started()).toEqual(['m']);
    expect(await started()).toEqual([]);
  });

  it('a failed init container under Never kills the pod and starts nothing more', async () => {
    const pod = makePod({
      restartPolicy: 'Never',
      initContainers: [{ name: 'i1', image: 'busybox' }],
      containers: [{ name: 'm', image: 'busybox' }],
    });
    await h.sync(pod);
    h.server.exitContainer(byName(await h.status(pod), 'i1')[0]!.id.id, 3);
    const r = await h.sync(pod);
    expect(r.syncResults.map((x) => x.action)).toEqual(['KillPodSandbox']);
    const status = await h.status(pod);
    expect(status.sandboxStatuses[0]!.state).toBe('notready');
    expect(byName(status, 'm')).toHaveLength(0);
  });

  it('restarts a crashed container at once, then after 10 s, 20 s; resets after 10 minutes of running', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const crash = async () => {
      const s = byName(await h.status(pod), 'c')[0]!;
      expect(s.state).toBe('running');
      h.server.exitContainer(s.id.id, 1);
      return s.restartCount;
    };
    const startResult = async () =>
      (await h.sync(pod)).syncResults.map((x) => [x.target, x.error ?? 'ok', x.message]);
    expect(await crash()).toBe(0);
    expect(await startResult()).toEqual([['c', 'ok', '']]); // the first restart is immediate
    expect(await crash()).toBe(1);
    const wait10 = [
      'c',
      'CrashLoopBackOff',
      `back-off 10s restarting failed container=c pod=${pod.metadata!.name}_default(${pod.metadata!.uid})`,
    ];
    expect(await startResult()).toEqual([wait10]); // at the exit
    await h.clock.tick(8000);
    expect(await startResult()).toEqual([wait10]); // 9 s after
    expect(await startResult()).toEqual([['c', 'ok', '']]); // 10 s after
    expect(await crash()).toBe(2);
    expect((await startResult())[0]![2]).toContain('back-off 20s');
    await h.clock.tick(18_000);
    expect((await startResult())[0]![1]).toBe('CrashLoopBackOff'); // 20 s not yet over
    expect(await startResult()).toEqual([['c', 'ok', '']]);
    expect(
      h.backOff.get(
        `${pod.metadata!.name}_default_${pod.metadata!.uid}_c_${hashContainer({ name: 'c', image: 'busybox:v2' })}`,
      ),
    ).toBe(40_000);
    // Ran 11 minutes: the backoff starts over, so the restart is immediate again.
    await h.clock.tick(11 * 60_000);
    expect(await crash()).toBe(3);
    expect(await startResult()).toEqual([['c', 'ok', '']]);
    const events = h.recorder.events.filter((e) => e.reason === 'BackOff');
    expect(events[0]!.message).toBe(
      `Back-off restarting failed container c in pod ${pod.metadata!.name}_default(${pod.metadata!.uid})`,
    );
    expect(events[0]!.type).toBe('Warning');
  });

  it('a changed image restarts the container whatever the restart policy, with a fresh backoff key', async () => {
    const pod = makePod({ restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const changed = { ...pod, spec: { ...pod.spec!, containers: [{ name: 'c', image: 'foo-image:1' }] } };
    h.server.addImage('foo-image:1');
    const r = await h.sync(changed);
    expect(r.syncResults.map((x) => [x.action, x.error])).toEqual([
      ['KillContainer', undefined],
      ['StartContainer', undefined],
    ]);
    const killing = h.recorder.events.find((e) => e.reason === 'Killing')!;
    expect(killing.message).toBe('Container c definition changed, will be restarted');
    expect(byName(await h.status(changed), 'c')[0]).toMatchObject({
      state: 'running',
      restartCount: 1,
      image: 'foo-image:1',
    });
  });
});

describe('ephemeral containers', () => {
  it('starts an ephemeral container once and never restarts it', async () => {
    const pod = makePod({ containers: [{ name: 'app', image: 'busybox:v2' }] });
    await h.sync(pod);
    const debug = {
      ...pod,
      spec: {
        ...pod.spec!,
        ephemeralContainers: [{ name: 'debugger', image: 'busybox:v2', command: ['sh'] }],
      },
    };
    let r = await h.sync(debug);
    expect(r.syncResults.map((x) => [x.action, x.target, x.error])).toEqual([
      ['StartContainer', 'debugger', undefined],
    ]);
    const create = h.server
      .calls<{ config: { annotations: Record<string, string> } }>('CreateContainer')
      .at(-1)!;
    expect(create.request.config.annotations['io.kubernetes.container.type']).toBe('ephemeral');
    const s = (await h.status(debug)).containerStatuses.find((c) => c.name === 'debugger')!;
    h.server.exitContainer(s.id.id, 1);
    r = await h.sync(debug);
    expect(r.syncResults).toEqual([]);
  });
});

describe('ephemeral containers with targetContainerName', () => {
  type Ns = { pid: number; targetId: string };
  const nsOf = () =>
    h.server
      .calls<{ config: { linux: { securityContext: { namespaceOptions: Ns } } } }>('CreateContainer')
      .at(-1)!.request.config.linux.securityContext.namespaceOptions;

  it("joins the running target's PID namespace (NamespaceMode TARGET)", async () => {
    const pod = makePod({ containers: [{ name: 'app', image: 'busybox:v2' }] });
    await h.sync(pod);
    const app = (await h.status(pod)).containerStatuses.find((c) => c.name === 'app')!;
    const debug = {
      ...pod,
      spec: {
        ...pod.spec!,
        ephemeralContainers: [{ name: 'debugger', image: 'busybox:v2', targetContainerName: 'app' }],
      },
    };
    const r = await h.sync(debug);
    expect(r.syncResults.map((x) => [x.target, x.error])).toEqual([['debugger', undefined]]);
    // CRI NamespaceMode: POD 0, CONTAINER 1, NODE 2, TARGET 3.
    expect(nsOf()).toMatchObject({ pid: 3, targetId: app.id.id });
  });

  it('fails with CreateContainerConfigError when the target is not running', async () => {
    const pod = makePod({ containers: [{ name: 'app', image: 'busybox:v2' }] });
    await h.sync(pod);
    const debug = {
      ...pod,
      spec: {
        ...pod.spec!,
        ephemeralContainers: [{ name: 'debugger', image: 'busybox:v2', targetContainerName: 'nope' }],
      },
    };
    const r = await h.sync(debug);
    expect(r.syncResults.map((x) => [x.target, x.error, x.message])).toEqual([
      ['debugger', 'CreateContainerConfigError', 'unable to find target container nope'],
    ]);
  });
});

describe('syncPod failures', () => {
  it('a failed step keeps the other steps and their results', async () => {
    const pod = makePod({
      containers: [
        { name: 'missing', image: 'localhost/absent:1', imagePullPolicy: 'Never' },
        { name: 'ok', image: 'busybox:v2' },
      ],
    });
    const r = await h.sync(pod);
    expect(
      r.syncResults.filter((x) => x.action === 'StartContainer').map((x) => [x.target, x.error]),
    ).toEqual([
      ['missing', 'ErrImageNeverPull'],
      ['ok', undefined],
    ]);
    expect(r.syncError).toBeUndefined();
    const status = await h.status(pod);
    expect(status.containerStatuses.map((c) => [c.name, c.state])).toEqual([['ok', 'running']]);
  });

  it('a failed sandbox creation is reported with an event and starts nothing', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    h.server.failNext('RunPodSandbox', 1, 'Unavailable', 'CNI is down');
    const r = await h.sync(pod);
    const create = r.syncResults.find((x) => x.action === 'CreatePodSandbox')!;
    expect(create.error).toBe('CreatePodSandboxError');
    expect(create.message).toContain('CNI is down');
    expect(r.syncResults.some((x) => x.action === 'StartContainer')).toBe(false);
    expect(h.recorder.events.find((e) => e.reason === 'FailedCreatePodSandBox')!.type).toBe('Warning');
    // The next sync tries again.
    const again = await h.sync(pod);
    expect(again.syncResults.filter((x) => x.error)).toEqual([]);
  });

  it('a failed kill of an unwanted container aborts the sync', async () => {
    const pod = makePod({
      containers: [
        { name: 'c', image: 'busybox:v2' },
        { name: 'd', image: 'busybox:v2' },
      ],
    });
    await h.sync(pod);
    const changed = {
      ...pod,
      spec: {
        ...pod.spec!,
        containers: [
          { name: 'c', image: 'foo-image' },
          { name: 'd', image: 'foo-image' },
        ],
      },
    };
    h.server.failNext('StopContainer', 1, 'Internal', 'stuck');
    const r = await h.sync(changed);
    expect(r.syncResults.map((x) => [x.action, x.target, x.error])).toEqual([
      ['KillContainer', 'c', 'KillContainerError'],
    ]);
  });

  it('an error of a regular init container ends the sync', async () => {
    const pod = makePod({
      initContainers: [{ name: 'i', image: 'localhost/absent:1', imagePullPolicy: 'Never' }],
      containers: [{ name: 'm', image: 'busybox:v2' }],
    });
    const r = await h.sync(pod);
    expect(
      r.syncResults.filter((x) => x.action === 'StartContainer').map((x) => [x.target, x.error]),
    ).toEqual([['i', 'ErrImageNeverPull']]);
  });
});

describe('computePodActions over the in-memory CRI', () => {
  it('sees a container killed by its liveness probe', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox' }] });
    await h.sync(pod);
    const s = byName(await h.status(pod), 'c')[0]!;
    h.liveness.set(`containerd://${s.id.id}`, 'Failure');
    const actions = computePodActions(pod, await h.status(pod), {
      liveness: { get: (id) => h.liveness.get(id) },
    });
    expect(actions.containersToStart).toEqual([0]);
    expect([...actions.containersToKill.values()].map((k) => k.reason)).toEqual(['LivenessProbe']);
    const r = await h.sync(pod);
    expect(r.syncResults.map((x) => [x.action, x.target, x.error])).toEqual([
      ['KillContainer', 'c', undefined],
      ['StartContainer', 'c', undefined],
    ]);
    const after = byName(await h.status(pod), 'c');
    expect(after.map((x) => x.state)).toEqual(['running', 'exited']);
    expect(h.server.calls('CreateContainer')).toHaveLength(2);
    expect(ContainerState.CONTAINER_RUNNING).toBe(1);
  });
});

describe('the status a sync reports', () => {
  const withoutTimestamp = (s: Awaited<ReturnType<Harness['status']>>) => ({ ...s, timestamp: 0 });

  it('after creating a pod: what getPodStatus then reads, told without listing the pod', async () => {
    const pod = makePod({
      containers: [
        { name: 'a', image: 'busybox:v2' },
        { name: 'b', image: 'busybox:v2' },
      ],
    });
    const before = await h.status(pod);
    h.server.clearCalls();
    const r = await h.manager.syncPod({ pod, podStatus: before, pullSecrets: [], backOff: h.backOff });
    expect(h.server.calls('ListPodSandbox')).toHaveLength(0);
    expect(h.server.calls('ListContainers')).toHaveLength(0);
    // One status read per started container, after its start.
    expect(h.server.calls('ContainerStatus')).toHaveLength(2);
    expect(r.podStatus).toBeDefined();
    h.server.clearCalls();
    const read = await h.status(pod);
    expect(withoutTimestamp(r.podStatus!)).toEqual(withoutTimestamp(read));
    expect(read.containerStatuses.map((c) => c.state)).toEqual(['running', 'running']);
    // The statuses the sync read are remembered: the read above made no status calls.
    expect(h.server.calls('ContainerStatus')).toHaveLength(0);
    expect(h.server.calls('PodSandboxStatus')).toHaveLength(0);
  });

  it('after restarting an exited container: the old instance kept, the new one added', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const first = await h.status(pod);
    h.server.exitContainer(byName(first, 'c')[0]!.id.id, 1);
    const exited = await h.status(pod);
    const r = await h.manager.syncPod({ pod, podStatus: exited, pullSecrets: [], backOff: h.backOff });
    expect(r.syncResults.map((x) => [x.action, x.error])).toEqual([['StartContainer', undefined]]);
    expect(r.podStatus).toBeDefined();
    expect(r.podStatus!.containerStatuses.map((c) => [c.state, c.restartCount])).toEqual([
      ['running', 1],
      ['exited', 0],
    ]);
    expect(withoutTimestamp(r.podStatus!)).toEqual(withoutTimestamp(await h.status(pod)));
  });

  it('none when the sync stopped something or a step failed', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    // A changed image: the running container is killed first.
    h.server.addImage('foo-image:1');
    const changed = { ...pod, spec: { ...pod.spec!, containers: [{ name: 'c', image: 'foo-image:1' }] } };
    const killed = await h.sync(changed);
    expect(killed.syncResults.map((x) => x.action)).toEqual(['KillContainer', 'StartContainer']);
    expect(killed.podStatus).toBeUndefined();

    const failing = makePod({
      containers: [
        { name: 'missing', image: 'localhost/absent:1', imagePullPolicy: 'Never' },
        { name: 'ok', image: 'busybox:v2' },
      ],
    });
    const failed = await h.sync(failing);
    expect(failed.syncResults.some((x) => x.error === 'ErrImageNeverPull')).toBe(true);
    expect(failed.podStatus).toBeUndefined();

    // A new sandbox for a pod that had containers: its init containers are purged, so the
    // status is read, not composed (the old init container must not count as done).
    const withInit = makePod({
      initContainers: [{ name: 'i', image: 'busybox:v2' }],
      containers: [{ name: 'm', image: 'busybox:v2' }],
    });
    await h.sync(withInit);
    h.server.exitContainer(byName(await h.status(withInit), 'i')[0]!.id.id, 0);
    await h.sync(withInit);
    const sandboxId = (await h.status(withInit)).sandboxStatuses[0]!.id;
    await h.rs.stopPodSandbox({ podSandboxId: sandboxId });
    const recreated = await h.sync(withInit);
    expect(recreated.syncResults.map((x) => x.action)).toContain('CreatePodSandbox');
    expect(recreated.podStatus).toBeUndefined();
    expect(byName(await h.status(withInit), 'i').map((c) => c.state)).toEqual(['running']);

    // A sync with nothing to do reports nothing either.
    const idle = await h.sync(changed);
    expect(idle.syncResults).toEqual([]);
    expect(idle.podStatus).toBeUndefined();
  });
});

describe('sandbox hostname', () => {
  // Upstream GetNodenameForKernel: an FQDN hostname must fit the kernel's 64-character nodename,
  // else the sandbox config cannot be built and the sandbox is not created.
  it('refuses a setHostnameAsFQDN hostname longer than 64 characters', async () => {
    const base = {
      containers: [{ name: 'c', image: 'busybox:v2' }],
      subdomain: 'sub',
      setHostnameAsFQDN: true,
    };
    // "<hostname>.sub.default.svc.cluster.local" is 30 characters plus the hostname.
    const fits = makePod({ ...base, hostname: 'h'.repeat(34) });
    const ok = await h.sync(fits);
    expect(ok.syncResults.filter((r) => r.error !== undefined)).toEqual([]);
    const run = h.server.calls<{ config: { hostname: string } }>('RunPodSandbox')[0]!.request.config;
    expect(run.hostname).toBe(`${'h'.repeat(34)}.sub.default.svc.cluster.local`);

    h.server.clearCalls();
    const tooLong = makePod({ ...base, hostname: 'h'.repeat(35) });
    const r = await h.sync(tooLong);
    const create = r.syncResults.find((x) => x.action === 'CreatePodSandbox')!;
    expect(create.error).toBe('CreatePodSandboxError');
    expect(create.message).toContain('is too long (64 characters is the max, 65 characters requested)');
    expect(h.server.calls('RunPodSandbox')).toHaveLength(0);
  });
});

describe('syncPod after the runtime went away mid-sync (issue #23)', () => {
  it('a container made but never started is removed and made again, with no restart counted', async () => {
    const pod = makePod({
      containers: [
        { name: 'a', image: 'busybox:v2' },
        { name: 'b', image: 'busybox:v2' },
      ],
    });
    // The runtime goes away between CreateContainer and StartContainer of the first container.
    h.server.failNext('StartContainer', 1, 'Unavailable', 'Connection dropped');
    const first = await h.sync(pod);
    expect(first.syncResults.find((r) => r.target === 'a')?.error).toBe('RunContainerError');
    const before = await h.status(pod);
    const leftover = byName(before, 'a');
    expect(leftover.map((c) => c.state)).toEqual(['created']);
    const running = byName(before, 'b')[0]!;

    h.server.clearCalls();
    const second = await h.sync(pod);
    expect(second.syncResults.map((r) => [r.action, r.target, r.error])).toEqual([
      ['StartContainer', 'a', undefined],
    ]);
    expect(
      h.server.calls('RemoveContainer').map((c) => (c.request as { containerId: string }).containerId),
    ).toEqual([leftover[0]!.id.id]);

    // Exactly one instance of each, running; the one that ran before is untouched.
    const after = await h.status(pod);
    expect(after.containerStatuses.map((c) => [c.name, c.state, c.restartCount]).sort()).toEqual([
      ['a', 'running', 0],
      ['b', 'running', 0],
    ]);
    expect(byName(after, 'b')[0]!.id).toEqual(running.id);
    const listed = await h.rs.listContainers({});
    expect(listed.containers).toHaveLength(2);
  });

  it('a never-started container that cannot be removed is not made twice; the next sync does it', async () => {
    const pod = makePod({ containers: [{ name: 'a', image: 'busybox:v2' }] });
    h.server.failNext('StartContainer', 1, 'Unavailable', 'Connection dropped');
    await h.sync(pod);
    h.server.failNext('RemoveContainer', 1, 'Unavailable', 'runtime is down');
    const blocked = await h.sync(pod);
    expect(blocked.syncResults).toEqual([
      expect.objectContaining({ action: 'StartContainer', target: 'a', error: 'RunContainerError' }),
    ]);
    expect((await h.rs.listContainers({})).containers).toHaveLength(1);
    await h.sync(pod);
    const after = await h.status(pod);
    expect(after.containerStatuses.map((c) => [c.name, c.state, c.restartCount])).toEqual([
      ['a', 'running', 0],
    ]);
    expect((await h.rs.listContainers({})).containers).toHaveLength(1);
  });

  it('a crash-looping container whose new instance never started keeps its count', async () => {
    const pod = makePod({ restartPolicy: 'Always', containers: [{ name: 'a', image: 'busybox:v2' }] });
    await h.sync(pod);
    const firstId = byName(await h.status(pod), 'a')[0]!.id.id;
    h.server.exitContainer(firstId, 1);
    await h.clock.tick(20_000);
    h.server.failNext('StartContainer', 1, 'Unavailable', 'Connection dropped');
    await h.sync(pod);
    expect(byName(await h.status(pod), 'a').map((c) => [c.state, c.restartCount])).toEqual([
      ['created', 1],
      ['exited', 0],
    ]);
    await h.clock.tick(20_000);
    await h.sync(pod);
    expect(byName(await h.status(pod), 'a').map((c) => [c.state, c.restartCount])).toEqual([
      ['running', 1],
      ['exited', 0],
    ]);
  });
});

describe('a never-started instance the replacing sync could not see (issue #23)', () => {
  it('is removed by the next sync once a newer instance runs, and nothing else is touched', async () => {
    const pod = makePod({ containers: [{ name: 'a', image: 'busybox:v2' }] });
    // The runtime goes away between CreateContainer and StartContainer.
    h.server.failNext('StartContainer', 1, 'Unavailable', 'Connection dropped');
    await h.sync(pod);
    const stray = byName(await h.status(pod), 'a')[0]!;
    expect(stray.state).toBe('created');
    // The next sync works from a status read before that container existed (its sandbox is
    // there), so it makes a second instance beside it.
    // containerd made its log file at creation, so the new instance counts from it.
    h.server.writeLog(stray.id.id, 'stdout', 'never ran');
    const stale = { ...(await h.status(pod)), containerStatuses: [] };
    await h.manager.syncPod({ pod, podStatus: stale, pullSecrets: [], backOff: h.backOff });
    await h.clock.tick(1000);
    const both = byName(await h.status(pod), 'a');
    expect(both.map((c) => c.state)).toEqual(['running', 'created']);

    h.server.clearCalls();
    await h.sync(pod);
    expect(
      h.server.calls('RemoveContainer').map((c) => (c.request as { containerId: string }).containerId),
    ).toEqual([stray.id.id]);
    const after = byName(await h.status(pod), 'a');
    expect(after.map((c) => [c.id.id, c.state])).toEqual([[both[0]!.id.id, 'running']]);
    expect(h.server.calls('StartContainer')).toHaveLength(0);
  });
});
