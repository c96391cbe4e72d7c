import { type Node, NodeApiError } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import {
  createNodeStatusPatch,
  defaultNodeLabelsFor,
  type NodeStatusInputs,
  NodeStatusManager,
  type NodeStatusManagerOptions,
} from '@kubelet-kit/nodestatus';
import { applyStrategicMergePatch, InMemoryNodeApi } from '@kubelet-kit/nodestatus/testing';
import { describe, expect, it } from 'vitest';

function inputs(over: Partial<NodeStatusInputs> = {}): NodeStatusInputs {
  return {
    hostname: 'node-a',
    nodeIPs: ['10.0.0.1'],
    interfaceAddresses: () => ['10.0.0.1'],
    lookupIP: async () => [],
    chooseHostInterface: () => undefined,
    machineInfo: () => ({
      numCores: 4,
      memoryCapacity: 8 * 1024 ** 3,
      machineID: 'mid',
      systemUUID: 'uuid',
      bootID: 'boot',
      hugePages: [{ pageSizeKiB: 2048, numPages: 0 }],
    }),
    capacity: () => ({ 'ephemeral-storage': 100 * 1024 ** 3 }),
    allocatableReservation: () => ({ cpu: 100, memory: 100 * 1024 ** 2 }),
    versionInfo: () => ({ kernelVersion: '6.1.0', osImage: 'Debian GNU/Linux 12 (bookworm)' }),
    runtimeVersion: async () => ({
      runtimeName: 'containerd',
      runtimeVersion: 'v2.0.0',
      runtimeApiVersion: 'v1',
    }),
    kubeletVersion: 'v1.34.0',
    kubeletPort: 10250,
    imageList: async () => [{ id: 'i1', repoTags: ['busybox:latest'], repoDigests: [], size: 4_000_000 }],
    runtimeErrors: () => [],
    networkErrors: () => [],
    operatingSystem: 'linux',
    architecture: 'amd64',
    ...over,
  };
}

function setup(over: Partial<NodeStatusManagerOptions> = {}, inputOver: Partial<NodeStatusInputs> = {}) {
  const clock = new FakeClock();
  const api = new InMemoryNodeApi({ now: () => clock.now() });
  const recorder = new InMemoryEventRecorder({ now: () => clock.now() });
  const manager = new NodeStatusManager({
    nodeName: 'node-a',
    api,
    inputs: inputs(inputOver),
    labels: { ...defaultNodeLabelsFor('node-a', 'linux', 'amd64'), 'example.com/role': 'edge' },
    taints: [{ key: 'dedicated', value: 'edge', effect: 'NoSchedule' }],
    clock,
    recorder,
    ...over,
  });
  return { clock, api, recorder, manager };
}

const unavailable = () => new NodeApiError('Unavailable', 'connection refused');

describe('NodeStatusManager registration (upstream registerWithAPIServer)', () => {
  it('registration is not cut off by the heartbeat timeout of a short update frequency', async () => {
    const { clock, api, manager } = setup({ nodeStatusUpdateFrequencyMs: 1000 });
    // The API server takes 3 s to answer the create: three heartbeat timeouts, well within the
    // registration's own bound.
    const create = api.createNode.bind(api);
    let creates = 0;
    api.createNode = async (node: Node) => {
      creates++;
      await clock.sleep(3000);
      return create(node);
    };
    manager.start();
    for (let i = 0; i < 40 && creates === 0; i++) await clock.tick(10);
    await clock.tick(3000);
    await clock.tick(0);
    const node = await manager.registeredNode();
    expect(node.metadata?.name).toBe('node-a');
    expect(creates).toBe(1);
    await manager.stop();
  });

  it('creates the Node with its labels, taints, annotation and full status', async () => {
    const { clock, api, recorder, manager } = setup();
    manager.start();
    await clock.tick(100);
    const node = await manager.registeredNode();
    expect(node.metadata).toMatchObject({
      name: 'node-a',
      labels: {
        'kubernetes.io/hostname': 'node-a',
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
        'example.com/role': 'edge',
      },
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    });
    expect(node.spec?.taints).toEqual([{ key: 'dedicated', value: 'edge', effect: 'NoSchedule' }]);
    const stored = api.nodes.get('node-a')!;
    expect(stored.status?.capacity).toEqual({
      cpu: '4',
      memory: '8Gi',
      pods: '110',
      'ephemeral-storage': '100Gi',
      'hugepages-2Mi': '0',
    });
    expect(stored.status?.allocatable).toEqual({
      cpu: '3900m',
      memory: '8092Mi',
      pods: '110',
      'ephemeral-storage': '100Gi',
      'hugepages-2Mi': '0',
    });
    expect(stored.status?.nodeInfo).toMatchObject({
      containerRuntimeVersion: 'containerd://v2.0.0',
      kubeletVersion: 'v1.34.0',
      operatingSystem: 'linux',
      architecture: 'amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      machineID: 'mid',
      systemUUID: 'uuid',
      bootID: 'boot',
    });
    expect(stored.status?.addresses).toEqual([
      { type: 'InternalIP', address: '10.0.0.1' },
      { type: 'Hostname', address: 'node-a' },
    ]);
    expect(stored.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
    expect(stored.status?.images).toEqual([{ names: ['busybox:latest'], sizeBytes: 4_000_000 }]);
    expect(stored.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ['Ready', 'True', 'KubeletReady'],
    ]);
    expect(recorder.events.map((e) => e.reason)).toEqual([
      'Starting',
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
      'RegisteredNode',
    ]);
    expect(recorder.events[0]).toMatchObject({
      object: { kind: 'Node', name: 'node-a', uid: 'node-a' },
      message: 'Starting kubelet.',
    });
    expect(recorder.events[1]?.message).toBe('Node node-a status is now: NodeHasSufficientMemory');
    await manager.stop();
  });

  it('retries while the API server is absent, waiting 100 ms doubling to 7 s', async () => {
    const { clock, api, manager } = setup();
    const start = clock.now();
    api.fault = (call) => (call.verb === 'create' && clock.since(start) < 20_000 ? unavailable() : undefined);
    manager.start();
    await clock.tick(30_000);
    const creates = api.calls.map((c, i) => ({ c, i })).filter(({ c }) => c.verb === 'create');
    expect(creates.length).toBeGreaterThan(1);
    expect(api.nodes.has('node-a')).toBe(true);
    await manager.stop();
  });

  it('spaces the attempts as upstream', async () => {
    const { clock, api, manager } = setup();
    const times: number[] = [];
    const start = clock.now();
    api.fault = (call) => {
      if (call.verb !== 'create') return undefined;
      times.push(clock.since(start));
      return unavailable();
    };
    manager.start();
    await clock.tick(27_000);
    expect(times).toEqual([100, 300, 700, 1500, 3100, 6300, 12_700, 19_700, 26_700]);
    await manager.stop();
  });

  it('reconciles an existing Node: default labels, hugepages and the attach/detach annotation', async () => {
    const { clock, api, recorder, manager } = setup();
    api.seed({
      metadata: {
        name: 'node-a',
        labels: {
          'kubernetes.io/hostname': 'old-name',
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          'topology.kubernetes.io/zone': 'zone-1',
          'someone.else/label': 'kept',
        },
      },
      spec: { podCIDR: '10.244.0.0/24' },
      status: {
        capacity: { cpu: '4', 'hugepages-1Gi': '2Gi', 'hugepages-2Mi': '20Mi' },
        allocatable: { cpu: '4', 'hugepages-1Gi': '2Gi', 'hugepages-2Mi': '20Mi' },
      },
    });
    manager.start();
    await clock.tick(100);
    const reconcile = api.statusPatches[0]!;
    expect(reconcile).toMatchObject({
      metadata: {
        labels: {
          'kubernetes.io/hostname': 'node-a',
          'topology.kubernetes.io/zone': null,
          'beta.kubernetes.io/os': 'linux',
        },
        annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      status: { capacity: { 'hugepages-1Gi': null, 'hugepages-2Mi': '0' } },
    });
    const stored = api.nodes.get('node-a')!;
    expect(stored.metadata?.labels?.['someone.else/label']).toBe('kept');
    expect(stored.metadata?.labels?.['example.com/role']).toBeUndefined();
    expect(stored.spec).toEqual({ podCIDR: '10.244.0.0/24' });
    expect(recorder.events.map((e) => e.reason)).not.toContain('RegisteredNode');
    await manager.registeredNode();
    await manager.stop();
  });

  it('with registerNode false never creates, and updates an existing Node', async () => {
    const { clock, api, manager } = setup({ registerNode: false });
    manager.start();
    await clock.tick(25_000);
    expect(api.calls.some((c) => c.verb === 'create')).toBe(false);
    expect(api.calls.filter((c) => c.verb === 'get').length).toBeGreaterThanOrEqual(5);
    api.seed({ metadata: { name: 'node-a' } });
    await clock.tick(10_000);
    const node = await manager.registeredNode();
    expect(node.metadata?.name).toBe('node-a');
    expect(api.nodes.get('node-a')?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(api.nodes.get('node-a')?.metadata?.labels).toEqual({
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
    });
    await manager.stop();
  });
});

describe('NodeStatusManager status updates (upstream updateNodeStatus)', () => {
  it('patches on change, not when unchanged within the report frequency, and at the report frequency', async () => {
    const { clock, api, manager } = setup();
    manager.start();
    await clock.tick(100);
    await manager.registeredNode();
    // The first update after registration always reports.
    expect(api.statusPatches).toHaveLength(1);
    await clock.tick(10_000 * 10);
    expect(api.statusPatches).toHaveLength(1);
    await clock.tick(5 * 60_000 - 10_000 * 10);
    expect(api.statusPatches).toHaveLength(2);
    const heartbeat = api.statusPatches[1]!;
    expect(Object.keys(heartbeat)).toEqual(['status']);
    expect((heartbeat.status as { conditions: unknown[] }).conditions).toHaveLength(4);
    await manager.stop();
  });

  it('reports a Ready change within one update period, with NodeNotReady / NodeReady events', async () => {
    let errs: string[] = [];
    const { clock, api, recorder, manager } = setup({}, { runtimeErrors: () => errs });
    manager.start();
    await clock.tick(100);
    await manager.registeredNode();
    const patches = api.statusPatches.length;
    errs = ['container runtime is down', 'PLEG is not healthy: pleg has yet to be successful'];
    await clock.tick(10_000);
    expect(api.statusPatches.length).toBe(patches + 1);
    const ready = api.nodes.get('node-a')?.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: '[container runtime is down, PLEG is not healthy: pleg has yet to be successful]',
      lastTransitionTime: new Date(Math.floor(clock.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z'),
    });
    errs = [];
    await clock.tick(10_000);
    expect(
      recorder.events.map((e) => e.reason).filter((r) => r.startsWith('NodeReady') || r === 'NodeNotReady'),
    ).toEqual(['NodeNotReady', 'NodeReady']);
    expect(recorder.events.find((e) => e.reason === 'NodeReady')?.message).toBe(
      'Node node-a status is now: NodeReady',
    );
    await manager.stop();
  });

  it('retries a failed update five times, the retries reading from the API server', async () => {
    const { clock, api, manager } = setup();
    manager.start();
    await clock.tick(100);
    await manager.registeredNode();
    const before = api.calls.length;
    api.fault = (call) =>
      call.verb === 'patchStatus' ? new NodeApiError('Conflict', 'conflict') : undefined;
    await clock.tick(5 * 60_000);
    const calls = api.calls.slice(before);
    // One report is due at 5 min: five attempts, each a get and a patch.
    expect(calls.filter((c) => c.verb === 'patchStatus')).toHaveLength(5);
    api.fault = undefined;
    await clock.tick(10_000);
    expect(api.nodes.get('node-a')?.status?.conditions).toHaveLength(4);
    await manager.stop();
  });

  it('gives up a call the API server does not answer after the update frequency', async () => {
    const { clock, api, manager } = setup();
    manager.start();
    await clock.tick(100);
    await manager.registeredNode();
    const inner = api.getNode.bind(api);
    let hung = 0;
    api.getNode = (name) => (hung++ < 5 ? new Promise<never>(() => {}) : inner(name));
    // The next update's five attempts time out after 10 s each; without the timeout the loop
    // would wait on the first for ever.
    await clock.tick(10_000 + 5 * 10_000 + 10_000);
    expect(hung).toBeGreaterThan(5);
    // A call in flight does not hold up stop.
    api.getNode = () => new Promise<never>(() => {});
    await clock.tick(10_000);
    await manager.stop();
  });

  it('reads the first attempt from a node lister when given one', async () => {
    const clock = new FakeClock();
    const api = new InMemoryNodeApi({ now: () => clock.now() });
    const manager = new NodeStatusManager({
      nodeName: 'node-a',
      api,
      inputs: inputs(),
      labels: defaultNodeLabelsFor('node-a', 'linux', 'amd64'),
      nodeLister: { get: (name) => api.nodes.get(name) },
      clock,
    });
    manager.start();
    await clock.tick(100);
    await clock.tick(60_000);
    expect(api.calls.filter((c) => c.verb === 'get')).toHaveLength(0);
    await manager.stop();
  });
});

describe('createNodeStatusPatch with the in-memory strategic merge', () => {
  it('merges conditions by type, replaces changed addresses whole, deletes removed keys', () => {
    const original: Node = {
      metadata: { name: 'n', labels: { a: '1', b: '2' } },
      spec: { unschedulable: true },
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.0.0.1' },
          { type: 'Hostname', address: 'n' },
        ],
        conditions: [
          { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            lastHeartbeatTime: '2026-01-01T00:00:00Z',
          },
          { type: 'NetworkUnavailable', status: 'False' },
        ],
        images: [{ names: ['a'], sizeBytes: 1 }],
        capacity: { cpu: '1', 'example.com/x': '1' },
      },
    };
    const modified: Node = {
      metadata: { name: 'n', labels: { a: '1', c: '3' } },
      spec: {},
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.0.0.2' },
          { type: 'Hostname', address: 'n' },
        ],
        conditions: [
          { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
          {
            type: 'Ready',
            status: 'False',
            reason: 'KubeletNotReady',
            lastHeartbeatTime: '2026-01-01T00:00:10Z',
          },
          { type: 'NetworkUnavailable', status: 'False' },
        ],
        images: [{ names: ['b'], sizeBytes: 2 }],
        capacity: { cpu: '1' },
      },
    };
    const patch = createNodeStatusPatch(original, modified)!;
    expect(patch).toEqual({
      metadata: { labels: { b: null, c: '3' } },
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.0.0.2' },
          { type: 'Hostname', address: 'n' },
          { $patch: 'replace' },
        ],
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'KubeletNotReady',
            lastHeartbeatTime: '2026-01-01T00:00:10Z',
          },
        ],
        images: [{ names: ['b'], sizeBytes: 2 }],
        capacity: { 'example.com/x': null },
      },
    });
    const applied = applyStrategicMergePatch(original, patch) as Node;
    expect(applied.status).toEqual(modified.status);
    expect(applied.metadata).toEqual(modified.metadata);
    expect(createNodeStatusPatch(modified, modified)).toBeUndefined();
  });

  it('deletes a condition that went away', () => {
    const patch = createNodeStatusPatch(
      {
        status: {
          conditions: [
            { type: 'A', status: 'True' },
            { type: 'B', status: 'True' },
          ],
        },
      },
      { status: { conditions: [{ type: 'A', status: 'True' }] } },
    )!;
    expect(patch).toEqual({ status: { conditions: [{ $patch: 'delete', type: 'B' }] } });
    expect(
      applyStrategicMergePatch(
        {
          status: {
            conditions: [
              { type: 'A', status: 'True' },
              { type: 'B', status: 'True' },
            ],
          },
        },
        patch,
      ),
    ).toEqual({ status: { conditions: [{ type: 'A', status: 'True' }] } });
  });
});
