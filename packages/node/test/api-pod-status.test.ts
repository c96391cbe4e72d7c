import type {
  ContainerStatus,
  Pod,
  PodStatus,
  RuntimePodStatus,
  RuntimeSandboxStatus,
} from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { generateAPIPodStatus } from '../src/api-pod-status.js';
import { ReasonCache } from '../src/reason-cache.js';

// Cases from upstream's kubelet_pods_test.go (TestGenerateAPIPodStatusPodIPs, TestSortPodIPs,
// TestGenerateAPIPodStatusHostNetworkPodIPs, TestGenerateAPIPodStatusWithSortedContainers,
// Test_generateAPIPodStatus) run through our generateAPIPodStatus.

const podOf = (spec: Partial<NonNullable<Pod['spec']>> = {}, status?: PodStatus): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'uid1' },
  spec: { containers: [{ name: 'containerA' }, { name: 'containerB' }], ...spec },
  ...(status ? { status } : {}),
});

const sandbox = (over: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus => ({
  id: 's1',
  name: 'p',
  namespace: 'ns',
  uid: 'uid1',
  attempt: 0,
  state: 'ready',
  createdAt: 0,
  ips: [],
  hostNetwork: false,
  labels: {},
  annotations: {},
  ...over,
});

const runtimeStatus = (over: Partial<RuntimePodStatus> = {}): RuntimePodStatus => ({
  id: 'uid1',
  name: 'p',
  namespace: 'ns',
  ips: [],
  containerStatuses: [],
  sandboxStatuses: [],
  timestamp: 0,
  ...over,
});

const generate = (
  pod: Pod,
  podStatus: RuntimePodStatus,
  o: { nodeIPs?: string[]; cachedStatus?: PodStatus; podIsTerminal?: boolean } = {},
) =>
  generateAPIPodStatus({
    pod,
    podStatus,
    podIsTerminal: o.podIsTerminal ?? false,
    cachedStatus: o.cachedStatus,
    reasonCache: new ReasonCache(),
    nodeIPs: o.nodeIPs ?? [],
  });

const running = (name: string): ContainerStatus => ({
  name,
  image: '',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { running: {} },
});

describe('generateAPIPodStatus: pod IPs', () => {
  // At most one IP of each family, the node's family first (IPv4 when the node IP is unknown).
  it.each([
    ['simple', [], ['10.0.0.1'], ['10.0.0.1']],
    ['dual-stack', [], ['10.0.0.1', 'fd01::1234'], ['10.0.0.1', 'fd01::1234']],
    [
      'dual-stack with explicit node IP',
      ['192.168.1.1'],
      ['10.0.0.1', 'fd01::1234'],
      ['10.0.0.1', 'fd01::1234'],
    ],
    [
      'dual-stack with CRI returning wrong family first',
      [],
      ['fd01::1234', '10.0.0.1'],
      ['10.0.0.1', 'fd01::1234'],
    ],
    [
      'dual-stack with explicit node IP, CRI returning wrong family first',
      ['192.168.1.1'],
      ['fd01::1234', '10.0.0.1'],
      ['10.0.0.1', 'fd01::1234'],
    ],
    ['dual-stack with IPv6 node IP', ['fd00::5678'], ['10.0.0.1', 'fd01::1234'], ['fd01::1234', '10.0.0.1']],
    ['IPv6 node IP, other CRI order', ['fd00::5678'], ['fd01::1234', '10.0.0.1'], ['fd01::1234', '10.0.0.1']],
    ['no pod IP matching the node IP', ['fd00::5678'], ['10.0.0.1'], ['10.0.0.1']],
    ['no pod IP matching the (unspecified) node IP', [], ['fd01::1234'], ['fd01::1234']],
    ['multiple IPv4 IPs', [], ['10.0.0.1', '10.0.0.2', '10.0.0.3'], ['10.0.0.1']],
    [
      'multiple dual-stack IPs',
      [],
      ['10.0.0.1', '10.0.0.2', 'fd01::1234', '10.0.0.3', 'fd01::5678'],
      ['10.0.0.1', 'fd01::1234'],
    ],
  ])('%s', (_name, nodeIPs, criIPs, want) => {
    const s = generate(podOf(), runtimeStatus({ ips: criIPs, sandboxStatuses: [sandbox({ ips: criIPs })] }), {
      nodeIPs,
    });
    expect(s.podIPs).toEqual(want.map((ip) => ({ ip })));
    expect(s.podIP).toBe(want[0]);
  });
});

describe('generateAPIPodStatus: host IPs and host-network pods', () => {
  const hostNetwork = podOf({ hostNetwork: true });

  it.each([
    ['simple', ['10.0.0.1'], [], ['10.0.0.1']],
    ['multiple single-stack node addresses', ['10.0.0.1', '10.0.0.2', '192.168.0.1'], [], ['10.0.0.1']],
    ['dual-stack node addresses', ['10.0.0.1', 'fd01::1234'], [], ['10.0.0.1', 'fd01::1234']],
    [
      'CRI pod IPs override node addresses',
      ['10.0.0.1', 'fd01::1234'],
      ['192.168.0.1'],
      ['192.168.0.1', 'fd01::1234'],
    ],
    [
      'CRI dual-stack pod IPs override node addresses',
      ['10.0.0.1', 'fd01::1234'],
      ['192.168.0.1', '2001:db8::2'],
      ['192.168.0.1', '2001:db8::2'],
    ],
    [
      'CRI dual-stack pod IPs override node addresses, IPv4 first',
      ['10.0.0.1', 'fd01::1234'],
      ['2001:db8::2', '192.168.0.1'],
      ['192.168.0.1', '2001:db8::2'],
    ],
  ])('%s', (_name, nodeIPs, criIPs, want) => {
    const s = generate(hostNetwork, runtimeStatus({ ips: criIPs }), { nodeIPs });
    expect(s.podIPs).toEqual(want.map((ip) => ({ ip })));
    expect(s.podIP).toBe(want[0]);
  });

  it('reports the primary node IP and the first of the other family as host IPs', () => {
    const s = generate(podOf(), runtimeStatus(), {
      nodeIPs: ['10.0.0.1', '10.0.0.2', 'fd01::1234', 'fd01::5678'],
    });
    expect(s.hostIP).toBe('10.0.0.1');
    expect(s.hostIPs).toEqual([{ ip: '10.0.0.1' }, { ip: 'fd01::1234' }]);
  });
});

describe('generateAPIPodStatus: containers and phase', () => {
  it('container statuses come sorted by name whatever the spec and runtime order', () => {
    const names = ['3container', '0container', '2container', '1container'];
    const pod = podOf({ containers: names.map((name) => ({ name })) });
    const s = generate(pod, runtimeStatus());
    expect(s.containerStatuses?.map((c) => c.name)).toEqual([...names].sort());
  });

  it('containers that were running and vanished count a restart and keep the pod Running ("with previous statuses and no deletion")', () => {
    const pod = podOf(
      { restartPolicy: 'Always' },
      { containerStatuses: [running('containerA'), running('containerB')] },
    );
    const cachedStatus: PodStatus = { containerStatuses: [running('containerA'), running('containerB')] };
    const s = generate(pod, runtimeStatus({ sandboxStatuses: [sandbox({ ips: ['10.0.0.10'] })] }), {
      cachedStatus,
    });
    expect(s.phase).toBe('Running');
    for (const c of s.containerStatuses ?? []) {
      expect(c.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
      expect(c.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
      expect(c.restartCount).toBe(1);
    }
  });

  it('a terminal phase of the cached status stays, with its reason and message', () => {
    const pod = podOf({ restartPolicy: 'Always' }, { phase: 'Running' });
    const cachedStatus: PodStatus = {
      phase: 'Succeeded',
      reason: 'Test',
      message: 'test',
      containerStatuses: [running('containerA'), running('containerB')],
    };
    const s = generate(pod, runtimeStatus(), { cachedStatus });
    expect([s.phase, s.reason, s.message]).toEqual(['Succeeded', 'Test', 'test']);
  });

  it('init containers that have not run wait in PodInitializing', () => {
    const pod = podOf({ initContainers: [{ name: 'init' }] });
    const s = generate(pod, runtimeStatus());
    expect(s.initContainerStatuses?.[0]?.state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(s.containerStatuses?.[0]?.state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(s.phase).toBe('Pending');
  });

  it('reports ephemeral containers in ephemeralContainerStatuses, not in containerStatuses', () => {
    const pod = podOf({
      ephemeralContainers: [
        { name: 'debugger', image: 'busybox', targetContainerName: 'containerA' },
        { name: 'later', image: 'busybox' },
      ],
    });
    const debuggerStatus = {
      id: { type: 'containerd', id: 'c-debug' },
      name: 'debugger',
      state: 'running' as const,
      createdAt: 1000,
      startedAt: 2000,
      finishedAt: 0,
      exitCode: 0,
      image: 'busybox',
      imageId: 'sha256:1',
      hash: '1',
      restartCount: 0,
      reason: '',
      message: '',
    };
    const s = generate(pod, runtimeStatus({ containerStatuses: [debuggerStatus] }));
    expect(
      s.ephemeralContainerStatuses?.map((c) => [c.name, c.containerID, Object.keys(c.state ?? {})]),
    ).toEqual([
      ['debugger', 'containerd://c-debug', ['running']],
      ['later', undefined, ['waiting']],
    ]);
    expect(s.containerStatuses?.map((c) => c.name)).toEqual(['containerA', 'containerB']);
    expect(generate(podOf(), runtimeStatus()).ephemeralContainerStatuses).toBeUndefined();
  });
});
