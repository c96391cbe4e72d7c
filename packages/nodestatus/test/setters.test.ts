import type { Node, NodeCondition } from '@kubelet-kit/core';
import {
  aggregateMessage,
  daemonEndpoints,
  diskPressureCondition,
  type ImageInfo,
  images,
  type MachineInfo,
  machineInfo,
  memoryPressureCondition,
  nodeAddress,
  pidPressureCondition,
  readyCondition,
  versionInfo,
  volumesInUse,
} from '@kubelet-kit/nodestatus';
import { describe, expect, it } from 'vitest';

const node = (): Node => ({ metadata: { name: 'node-a' } });

interface Recorded {
  type: string;
  reason: string;
  message: string | undefined;
}
function recorder() {
  const events: Recorded[] = [];
  return {
    events,
    record: (type: string, reason: string, message?: string) => events.push({ type, reason, message }),
  };
}

describe('nodeAddress (upstream TestNodeAddress, without a cloud provider)', () => {
  const base = {
    hostname: 'node-a',
    interfaceAddresses: () => ['127.0.0.1', '10.0.0.1', '2001:db8::1', 'fe80::1'],
    lookupIP: async () => [] as string[],
    chooseHostInterface: () => '10.0.0.9',
  };
  const cases: {
    name: string;
    nodeIPs?: string[];
    hostname?: string;
    lookup?: string[];
    choose?: string | undefined;
    want?: { type: string; address: string }[];
    error?: string;
  }[] = [
    {
      name: 'a --node-ip on the host',
      nodeIPs: ['10.0.0.1'],
      want: [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'Hostname', address: 'node-a' },
      ],
    },
    {
      name: 'a dual-stack --node-ip',
      nodeIPs: ['10.0.0.1', '2001:db8::1'],
      want: [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'InternalIP', address: '2001:db8::1' },
        { type: 'Hostname', address: 'node-a' },
      ],
    },
    {
      name: 'a loopback --node-ip',
      nodeIPs: ['127.0.0.1'],
      error: "failed to validate nodeIP: nodeIP can't be loopback address",
    },
    {
      name: 'a link-local --node-ip',
      nodeIPs: ['fe80::1'],
      error: "failed to validate nodeIP: nodeIP can't be a link-local unicast address",
    },
    { name: 'a multicast --node-ip', nodeIPs: ['224.0.0.1'], error: "nodeIP can't be a multicast address" },
    {
      name: 'a --node-ip not on the host',
      nodeIPs: ['10.1.1.1'],
      error: 'node IP: "10.1.1.1" not found in the host\'s network interfaces',
    },
    { name: 'not an IP', nodeIPs: ['bogus'], error: 'nodeIP must be a valid IP address' },
    {
      name: 'a hostname that is an IP',
      hostname: '10.0.0.5',
      want: [
        { type: 'InternalIP', address: '10.0.0.5' },
        { type: 'Hostname', address: '10.0.0.5' },
      ],
    },
    {
      name: 'DNS answers: IPv4 preferred, invalid ones skipped',
      lookup: ['127.0.0.1', '2001:db8::1', '10.0.0.1'],
      want: [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'Hostname', address: 'node-a' },
      ],
    },
    {
      name: 'DNS answers only IPv6',
      lookup: ['2001:db8::1'],
      want: [
        { type: 'InternalIP', address: '2001:db8::1' },
        { type: 'Hostname', address: 'node-a' },
      ],
    },
    {
      name: '`::` prefers IPv6 among DNS answers',
      nodeIPs: ['::'],
      lookup: ['10.0.0.1', '2001:db8::1'],
      want: [
        { type: 'InternalIP', address: '2001:db8::1' },
        { type: 'Hostname', address: 'node-a' },
      ],
    },
    {
      name: 'no DNS answer: the default route interface',
      want: [
        { type: 'InternalIP', address: '10.0.0.9' },
        { type: 'Hostname', address: 'node-a' },
      ],
    },
    { name: 'nothing found', choose: undefined, error: "can't get ip address of node node-a" },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const n = node();
      const setter = nodeAddress({
        ...base,
        ...(c.nodeIPs ? { nodeIPs: c.nodeIPs } : {}),
        ...(c.hostname ? { hostname: c.hostname } : {}),
        lookupIP: async () => c.lookup ?? [],
        chooseHostInterface: () => ('choose' in c ? c.choose : '10.0.0.9'),
      });
      if (c.error) {
        await expect(setter(n)).rejects.toThrow(c.error);
        expect(n.status?.addresses).toBeUndefined();
      } else {
        await setter(n);
        expect(n.status?.addresses).toEqual(c.want);
      }
    });
  }
});

describe('machineInfo (upstream TestMachineInfo)', () => {
  const info: MachineInfo = {
    numCores: 2,
    memoryCapacity: 1024 * 1024 * 1024,
    machineID: 'machine-id',
    systemUUID: 'uuid',
    bootID: 'boot-1',
  };
  const setter = (o: Partial<Parameters<typeof machineInfo>[0]> = {}) =>
    machineInfo({
      nodeName: 'node-a',
      maxPods: 110,
      machineInfo: () => info,
      allocatableReservation: () => ({}),
      recordEvent: () => {},
      ...o,
    });

  it('reports capacity, allocatable and machine ids', async () => {
    const n = node();
    await setter({ capacity: () => ({ 'ephemeral-storage': 5000 }) })(n);
    expect(n.status?.capacity).toEqual({ cpu: '2', memory: '1Gi', pods: '110', 'ephemeral-storage': '5000' });
    expect(n.status?.allocatable).toEqual(n.status?.capacity);
    expect(n.status?.nodeInfo).toMatchObject({
      machineID: 'machine-id',
      systemUUID: 'uuid',
      bootID: 'boot-1',
    });
  });

  it('takes the reservation off allocatable, never below zero', async () => {
    const n = node();
    await setter({
      capacity: () => ({ 'ephemeral-storage': 5000 }),
      allocatableReservation: () => ({ cpu: 100, memory: 100 * 1024 * 1024, 'ephemeral-storage': 6000 }),
    })(n);
    expect(n.status?.allocatable).toEqual({
      cpu: '1900m',
      memory: '924Mi',
      pods: '110',
      'ephemeral-storage': '0',
    });
  });

  it('takes hugepages off allocatable memory', async () => {
    const n = node();
    await setter({
      machineInfo: () => ({
        ...info,
        hugePages: [
          { pageSizeKiB: 2048, numPages: 100 },
          { pageSizeKiB: 1048576, numPages: 0 },
        ],
      }),
    })(n);
    expect(n.status?.capacity).toMatchObject({
      'hugepages-2Mi': '200Mi',
      'hugepages-1Gi': '0',
      memory: '1Gi',
    });
    expect(n.status?.allocatable).toMatchObject({ 'hugepages-2Mi': '200Mi', memory: '824Mi' });
  });

  it('caps pods at cores × pods-per-core', async () => {
    const n = node();
    await setter({ podsPerCore: 10 })(n);
    expect(n.status?.capacity?.pods).toBe('20');
  });

  it('keeps capacity others advertised, drops extended resources gone from capacity', async () => {
    const n: Node = {
      metadata: { name: 'node-a' },
      status: {
        capacity: { 'example.com/admin': '3' },
        allocatable: { 'example.com/gone': '1', 'example.com/admin': '3' },
      },
    };
    await setter({ extendedResources: () => ({ 'example.com/foo': 2 }) })(n);
    expect(n.status?.capacity).toMatchObject({ 'example.com/admin': '3', 'example.com/foo': '2' });
    expect(n.status?.allocatable).toMatchObject({ 'example.com/admin': '3', 'example.com/foo': '2' });
    expect(n.status?.allocatable).not.toHaveProperty('example.com/gone');
  });

  it('reports zero cpu and memory when the machine cannot be read', async () => {
    const n = node();
    await setter({
      machineInfo: () => {
        throw new Error('no cadvisor');
      },
    })(n);
    expect(n.status?.capacity).toEqual({ cpu: '0', memory: '0', pods: '110' });
  });

  it('records Rebooted when the boot ID changes', async () => {
    const r = recorder();
    const n: Node = { metadata: { name: 'node-a' }, status: { nodeInfo: { bootID: 'boot-0' } as never } };
    await setter({ recordEvent: r.record })(n);
    expect(r.events).toEqual([
      { type: 'Warning', reason: 'Rebooted', message: 'Node node-a has been rebooted, boot id: boot-1' },
    ]);
    await setter({ recordEvent: r.record })(n);
    expect(r.events).toHaveLength(1);
  });
});

describe('versionInfo (upstream TestVersionInfo)', () => {
  it('reports kernel, OS image, runtime and kubelet versions', async () => {
    const n = node();
    await versionInfo({
      versionInfo: () => ({ kernelVersion: '6.1.0', osImage: 'Debian GNU/Linux 12 (bookworm)' }),
      runtimeVersion: async () => ({
        runtimeName: 'containerd',
        runtimeVersion: 'v2.0.0',
        runtimeApiVersion: 'v1',
      }),
      kubeletVersion: 'v1.34.0',
    })(n);
    expect(n.status?.nodeInfo).toMatchObject({
      kernelVersion: '6.1.0',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      containerRuntimeVersion: 'containerd://v2.0.0',
      kubeletVersion: 'v1.34.0',
      kubeProxyVersion: '',
    });
  });

  it('says Unknown when the runtime does not answer, and fails without host info', async () => {
    const n = node();
    const s = versionInfo({
      versionInfo: () => ({ kernelVersion: 'k', osImage: 'o' }),
      runtimeVersion: async () => {
        throw new Error('down');
      },
      kubeletVersion: 'v1.34.0',
    });
    await s(n);
    expect(n.status?.nodeInfo?.containerRuntimeVersion).toBe('unknown://Unknown');
    await expect(
      versionInfo({
        versionInfo: () => {
          throw new Error('uname failed');
        },
        runtimeVersion: async () => ({ runtimeName: 'x', runtimeVersion: 'y', runtimeApiVersion: 'v1' }),
        kubeletVersion: 'v1.34.0',
      })(node()),
    ).rejects.toThrow('error getting version info: uname failed');
  });
});

describe('images (upstream TestImages)', () => {
  const mk = (n: number): ImageInfo[] =>
    Array.from({ length: n }, (_, i) => ({
      id: `sha256:${String(i).padStart(3, '0')}`,
      repoTags: [`repo/image${i}:tag`],
      repoDigests: [`repo/image${i}@sha256:${i}`],
      size: (i + 1) * 1000,
    }));

  for (const [count, max, want] of [
    [5, 50, 5],
    [60, 50, 50],
    [60, -1, 60],
    [0, 50, 0],
  ] as const) {
    it(`${count} images, at most ${max}: ${want} reported, largest first`, async () => {
      const n = node();
      await images(max, async () => mk(count))(n);
      expect(n.status?.images?.length ?? 0).toBe(want);
      if (want > 0) {
        expect(n.status?.images?.[0]).toEqual({
          names: [`repo/image${count - 1}@sha256:${count - 1}`, `repo/image${count - 1}:tag`],
          sizeBytes: count * 1000,
        });
      }
    });
  }

  it('names digests then tags, at most five', async () => {
    const n = node();
    await images(50, async () => [
      { id: 'a', repoDigests: ['d1', 'd2', 'd3'], repoTags: ['t1', 't2', 't3'], size: 1 },
    ])(n);
    expect(n.status?.images?.[0]?.names).toEqual(['d1', 'd2', 'd3', 't1', 't2']);
  });

  it('clears the list when the runtime fails to list', async () => {
    const n: Node = { metadata: { name: 'n' }, status: { images: [{ names: ['x'], sizeBytes: 1 }] } };
    await expect(
      images(50, async () => {
        throw new Error('no');
      })(n),
    ).rejects.toThrow('error getting image list: no');
    expect(n.status?.images).toBeUndefined();
  });
});

describe('readyCondition (upstream TestReadyCondition)', () => {
  const capacity = { cpu: '1', memory: '1Gi', pods: '110', 'ephemeral-storage': '1Gi' };
  const t0 = Date.UTC(2026, 0, 1, 0, 0, 0);
  const t1 = t0 + 10_000;
  const ready = (now: number): NodeCondition => ({
    type: 'Ready',
    status: 'True',
    reason: 'KubeletReady',
    message: 'kubelet is posting ready status',
    lastHeartbeatTime: new Date(now).toISOString().replace('.000Z', 'Z'),
    lastTransitionTime: new Date(now).toISOString().replace('.000Z', 'Z'),
  });
  const notReady = (message: string, now: number): NodeCondition => ({
    ...ready(now),
    status: 'False',
    reason: 'KubeletNotReady',
    message,
  });
  const cases: {
    name: string;
    runtime?: string[];
    network?: string[];
    storage?: string[];
    capacity?: Record<string, string>;
    want: NodeCondition;
  }[] = [
    { name: 'ready', want: ready(t0) },
    {
      name: 'runtime down',
      runtime: ['container runtime is down'],
      want: notReady('container runtime is down', t0),
    },
    {
      name: 'PLEG unhealthy and network not ready',
      runtime: ['PLEG is not healthy: pleg has yet to be successful'],
      network: ['container runtime network not ready: NetworkReady=false'],
      want: notReady(
        '[PLEG is not healthy: pleg has yet to be successful, container runtime network not ready: NetworkReady=false]',
        t0,
      ),
    },
    { name: 'storage errors', storage: ['some storage error'], want: notReady('some storage error', t0) },
    {
      name: 'missing capacity',
      capacity: { cpu: '1' },
      want: notReady('missing node capacity for resources: memory, pods, ephemeral-storage', t0),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const n: Node = { metadata: { name: 'node-a' }, status: { capacity: c.capacity ?? capacity } };
      readyCondition({
        now: () => t0,
        runtimeErrors: () => c.runtime ?? [],
        networkErrors: () => c.network ?? [],
        storageErrors: () => c.storage ?? [],
        recordEvent: () => {},
      })(n);
      expect(n.status?.conditions).toEqual([c.want]);
    });
  }

  it('moves lastTransitionTime and records events only when the status changes', () => {
    const r = recorder();
    let errs: string[] = [];
    let now = t0;
    const n: Node = { metadata: { name: 'node-a' }, status: { capacity } };
    const s = readyCondition({
      now: () => now,
      runtimeErrors: () => errs,
      networkErrors: () => [],
      recordEvent: r.record,
    });
    s(n);
    expect(r.events).toEqual([]);
    now = t1;
    s(n);
    expect(n.status?.conditions).toEqual([
      { ...ready(t1), lastTransitionTime: ready(t0).lastTransitionTime },
    ]);
    errs = ['container runtime is down'];
    now = t1 + 10_000;
    s(n);
    expect(n.status?.conditions).toEqual([notReady('container runtime is down', t1 + 10_000)]);
    expect(r.events).toEqual([{ type: 'Normal', reason: 'NodeNotReady', message: undefined }]);
    errs = [];
    s(n);
    expect(r.events.map((e) => e.reason)).toEqual(['NodeNotReady', 'NodeReady']);
  });

  it('aggregates like upstream: one message bare, several bracketed, repeats once', () => {
    expect(aggregateMessage([])).toBeUndefined();
    expect(aggregateMessage(['a'])).toBe('a');
    expect(aggregateMessage(['a', 'b', 'a'])).toBe('[a, b]');
  });
});

describe('pressure conditions (upstream TestMemoryPressureCondition and siblings)', () => {
  const setters = [
    [
      'MemoryPressure',
      memoryPressureCondition,
      'KubeletHasSufficientMemory',
      'NodeHasSufficientMemory',
      'KubeletHasInsufficientMemory',
      'NodeHasInsufficientMemory',
    ],
    [
      'DiskPressure',
      diskPressureCondition,
      'KubeletHasNoDiskPressure',
      'NodeHasNoDiskPressure',
      'KubeletHasDiskPressure',
      'NodeHasDiskPressure',
    ],
    [
      'PIDPressure',
      pidPressureCondition,
      'KubeletHasSufficientPID',
      'NodeHasSufficientPID',
      'KubeletHasInsufficientPID',
      'NodeHasInsufficientPID',
    ],
  ] as const;
  for (const [type, make, falseReason, falseEvent, trueReason, trueEvent] of setters) {
    it(`${type}: False on first report, True under pressure, events on each change`, () => {
      const r = recorder();
      let pressure = false;
      let now = Date.UTC(2026, 0, 1);
      const n = node();
      const s = make(
        () => now,
        () => pressure,
        r.record,
      );
      s(n);
      const first = n.status?.conditions?.[0];
      expect(first).toMatchObject({ type, status: 'False', reason: falseReason });
      expect(first?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
      now += 10_000;
      s(n);
      expect(n.status?.conditions?.[0]).toMatchObject({
        lastHeartbeatTime: '2026-01-01T00:00:10Z',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      });
      pressure = true;
      s(n);
      expect(n.status?.conditions?.[0]).toMatchObject({ status: 'True', reason: trueReason });
      expect(r.events.map((e) => e.reason)).toEqual([falseEvent, trueEvent]);
      expect(n.status?.conditions).toHaveLength(1);
    });
  }
});

describe('daemonEndpoints and volumesInUse', () => {
  it('reports the kubelet port', () => {
    const n = node();
    daemonEndpoints(10250)(n);
    expect(n.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
  });

  it('reports volumes in use only once the reconciler has synced', () => {
    const n: Node = { metadata: { name: 'n' }, status: { volumesInUse: ['old'] } };
    let synced = false;
    const s = volumesInUse(
      () => synced,
      () => ['kubernetes.io/csi/vol-1'],
    );
    s(n);
    expect(n.status?.volumesInUse).toEqual(['old']);
    synced = true;
    s(n);
    expect(n.status?.volumesInUse).toEqual(['kubernetes.io/csi/vol-1']);
  });
});
