import type { Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { admitPod, PodResourceUsage, podRequest } from '../src/admission.js';
import type { NodeInfo } from '../src/node-info.js';
import { SysctlAllowlist } from '../src/sysctl.js';

const pod = (
  name: string,
  requests: Record<string, string> = {},
  extra: Partial<NonNullable<Pod['spec']>> = {},
): Pod => ({
  metadata: { name, namespace: 'default', uid: name },
  spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests } }], ...extra },
});
const allocatable = { cpu: 2, memory: 4 * 2 ** 30, pods: 3 };

describe('admitPod', () => {
  it('admits a pod that fits', () => {
    expect(admitPod({ pod: pod('a', { cpu: '500m' }), activePods: [], allocatable })).toEqual({
      admit: true,
    });
  });

  it('rejects past max pods with upstream reason and message', () => {
    const r = admitPod({ pod: pod('d'), activePods: [pod('a'), pod('b'), pod('c')], allocatable });
    expect(r.admit).toBe(false);
    expect(r.reason).toBe('OutOfpods');
    expect(r.message).toBe("Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3");
  });

  it('rejects cpu and memory requests beyond allocatable', () => {
    const cpu = admitPod({
      pod: pod('b', { cpu: '1500m' }),
      activePods: [pod('a', { cpu: '1' })],
      allocatable,
    });
    expect(cpu).toMatchObject({ admit: false, reason: 'OutOfcpu' });
    // Upstream's InsufficientResourceError prints the integers it compares: millicores for cpu.
    expect(cpu.message).toBe(
      "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
    );
    const mem = admitPod({ pod: pod('b', { memory: '5Gi' }), activePods: [], allocatable });
    expect(mem).toMatchObject({ admit: false, reason: 'OutOfmemory' });
  });

  it('counts the largest init container against the sum of the others', () => {
    const p: Pod = {
      metadata: { name: 'x', uid: 'x' },
      spec: {
        initContainers: [
          { name: 'init', image: 'i', resources: { requests: { cpu: '3' } } },
          { name: 'side', image: 'i', restartPolicy: 'Always', resources: { requests: { cpu: '100m' } } },
        ],
        containers: [{ name: 'c', image: 'i', resources: { requests: { cpu: '1' } } }],
      },
    };
    expect(podRequest(p, 'cpu')).toBe(3);
    expect(admitPod({ pod: p, activePods: [], allocatable }).reason).toBe('OutOfcpu');
  });

  it('rejects a host port already taken', () => {
    const withPort = (name: string) =>
      pod(
        name,
        {},
        { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80, hostPort: 8080 }] }] },
      );
    // Upstream's NodePorts predicate failure: reason is the plugin name, message its ErrReason.
    expect(admitPod({ pod: withPort('b'), activePods: [withPort('a')], allocatable })).toEqual({
      admit: false,
      reason: 'NodePorts',
      message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    });
  });

  it('applies the host network and privileged policies', () => {
    expect(
      admitPod({
        pod: pod('h', {}, { hostNetwork: true }),
        activePods: [],
        allocatable,
        allowHostNetwork: false,
      }).reason,
    ).toBe('HostNetworkNotAllowed');
    const priv = pod(
      'p',
      {},
      { containers: [{ name: 'c', image: 'i', securityContext: { privileged: true } }] },
    );
    expect(admitPod({ pod: priv, activePods: [], allocatable, allowPrivileged: false }).reason).toBe(
      'PrivilegedNotAllowed',
    );
    expect(admitPod({ pod: priv, activePods: [], allocatable }).admit).toBe(true);
  });

  it('decides the same with a kept PodResourceUsage as by summing activePods', () => {
    const withPort = (name: string, hostPort: number, requests: Record<string, string> = {}) =>
      pod(
        name,
        {},
        {
          containers: [
            { name: 'c', image: 'i', resources: { requests }, ports: [{ containerPort: 80, hostPort }] },
          ],
        },
      );
    const big = { cpu: 64, memory: 2 ** 40, pods: 1000 };
    const candidates = [
      pod('a', { cpu: '700m', memory: '1Gi' }),
      withPort('b', 8080, { cpu: '500m' }),
      pod('c', { memory: '2Gi' }),
      withPort('d', 8080),
      pod('e', { cpu: '900m' }),
      pod('f', { memory: '1500Mi' }),
      withPort('g', 9090, { cpu: '100m' }),
      pod('h'),
    ];
    for (const limits of [allocatable, { ...allocatable, pods: 5 }, big]) {
      const active: Pod[] = [];
      const usage = new PodResourceUsage();
      const reasons: (string | undefined)[] = [];
      for (const candidate of candidates) {
        const summed = admitPod({ pod: candidate, activePods: active, allocatable: limits });
        const kept = admitPod({ pod: candidate, activePods: active, allocatable: limits, usage });
        expect(kept).toEqual(summed);
        reasons.push(summed.reason);
        if (summed.admit) {
          active.push(candidate);
          usage.add(candidate);
        }
      }
      expect(usage.count).toBe(active.length);
      expect(usage.cpu).toBeCloseTo(active.reduce((s, p) => s + podRequest(p, 'cpu'), 0));
      if (limits === allocatable) {
        // cpu 2 and 4 GiB, 3 pods: a and b fit, c fits, then the pod count is full.
        expect(reasons).toEqual([
          undefined,
          undefined,
          undefined,
          'OutOfpods',
          'OutOfpods',
          'OutOfpods',
          'OutOfpods',
          'OutOfpods',
        ]);
      }
      if (limits === big) expect(reasons).toContain('NodePorts');
    }
  });

  it('compares whole millicores and bytes, as upstream does, not float sums', () => {
    // 100m + 200m + 700m is exactly one core: upstream's fitsRequest admits the third pod.
    const oneCore = { cpu: 1, memory: 2 ** 30, pods: 10 };
    const active = [pod('a', { cpu: '100m' }), pod('b', { cpu: '200m' })];
    expect(admitPod({ pod: pod('c', { cpu: '700m' }), activePods: active, allocatable: oneCore })).toEqual({
      admit: true,
    });
    const usage = new PodResourceUsage(active);
    expect(
      admitPod({ pod: pod('c', { cpu: '700m' }), activePods: active, allocatable: oneCore, usage }).admit,
    ).toBe(true);
    // One millicore more does not fit; the message is in whole millicores.
    expect(
      admitPod({ pod: pod('c', { cpu: '701m' }), activePods: active, allocatable: oneCore }).message,
    ).toBe("Node didn't have enough resource: cpu, requested: 701, used: 300, capacity: 1000");
    // Memory in whole bytes, each pod's rounded up (Quantity.Value): 0.1Gi is 107374183 bytes, so
    // two of them do not fit in 214748365 bytes although 0.2Gi would.
    const tenth = admitPod({
      pod: pod('t2', { memory: '0.1Gi' }),
      activePods: [pod('t1', { memory: '0.1Gi' })],
      allocatable: { ...oneCore, memory: 214748365 },
    });
    expect(tenth.message).toBe(
      "Node didn't have enough resource: memory, requested: 107374183, used: 107374183, capacity: 214748365",
    );
    const mem = admitPod({
      pod: pod('m', { memory: '0.5Gi' }),
      activePods: [pod('x', { memory: '0.75Gi' })],
      allocatable: { ...oneCore, memory: 2 ** 30 },
    });
    expect(mem).toEqual({
      admit: false,
      reason: 'OutOfmemory',
      message:
        "Node didn't have enough resource: memory, requested: 536870912, used: 805306368, capacity: 1073741824",
    });
  });

  it('reports the pod count before cpu and memory (fitsRequest order)', () => {
    const r = admitPod({
      pod: pod('d', { cpu: '5', memory: '10Gi' }),
      activePods: [pod('a'), pod('b'), pod('c')],
      allocatable,
    });
    expect(r.reason).toBe('OutOfpods');
    const cpuFirst = admitPod({ pod: pod('d', { cpu: '5', memory: '10Gi' }), activePods: [], allocatable });
    expect(cpuFirst.reason).toBe('OutOfcpu');
  });

  it('admits a pod with no requests on a node whose cpu is already overcommitted', () => {
    // fitsRequest returns early when the pod requests nothing; only the pod count is checked.
    const full = admitPod({
      pod: pod('b'),
      activePods: [pod('a', { cpu: '3', memory: '5Gi' })],
      allocatable,
    });
    expect(full).toEqual({ admit: true });
    // A memory-only pod is not refused for cpu it does not ask for.
    const memOnly = admitPod({
      pod: pod('b', { memory: '1Gi' }),
      activePods: [pod('a', { cpu: '3' })],
      allocatable,
    });
    expect(memOnly).toEqual({ admit: true });
  });

  it('adds the pod overhead to its requests (resource.PodRequests)', () => {
    const p = pod('o', { cpu: '1500m', memory: '1Gi' }, { overhead: { cpu: '250m', memory: '128Mi' } });
    expect(podRequest(p, 'cpu')).toBeCloseTo(1.75);
    expect(podRequest(p, 'memory')).toBe(2 ** 30 + 128 * 2 ** 20);
    const r = admitPod({ pod: p, activePods: [pod('a', { cpu: '500m' })], allocatable });
    expect(r.message).toBe(
      "Node didn't have enough resource: cpu, requested: 1750, used: 500, capacity: 2000",
    );
    // ...and an admitted pod's overhead counts as used.
    const usage = new PodResourceUsage([p]);
    expect(usage.cpu).toBeCloseTo(1.75);
  });

  it('takes pod-level requests over the containers sum (PodLevelResources)', () => {
    // The pod-level field is newer than the API types we build on.
    const p = pod('pl', { cpu: '100m', memory: '1Gi' }, {
      resources: { requests: { cpu: '2500m' } },
    } as Partial<NonNullable<Pod['spec']>>);
    expect(podRequest(p, 'cpu')).toBeCloseTo(2.5);
    // Memory has no pod-level request: the containers' sum stays.
    expect(podRequest(p, 'memory')).toBe(2 ** 30);
    expect(admitPod({ pod: p, activePods: [], allocatable }).reason).toBe('OutOfcpu');
  });

  it('counts sidecars with the regular containers and the largest init container beside them', () => {
    // A sidecar declared before an init container runs beside it: 200m + 1, against 200m + 500m.
    const p: Pod = {
      metadata: { name: 'x', uid: 'x' },
      spec: {
        initContainers: [
          { name: 'side', image: 'i', restartPolicy: 'Always', resources: { requests: { cpu: '200m' } } },
          { name: 'init', image: 'i', resources: { requests: { cpu: '1' } } },
        ],
        containers: [{ name: 'c', image: 'i', resources: { requests: { cpu: '500m' } } }],
      },
    };
    expect(podRequest(p, 'cpu')).toBeCloseTo(1.2);
    // A sidecar declared after the init container does not run beside it.
    const later: Pod = {
      ...p,
      spec: {
        ...p.spec,
        initContainers: [...(p.spec?.initContainers ?? [])].reverse(),
        containers: p.spec?.containers ?? [],
      },
    };
    expect(podRequest(later, 'cpu')).toBeCloseTo(1);
  });

  describe('host ports (upstream TestNodePorts)', () => {
    const withPorts = (name: string, ...specs: string[]): Pod =>
      pod(
        name,
        {},
        {
          containers: [
            {
              name: 'c',
              image: 'i',
              ports: specs.map((s) => {
                const [protocol, hostIP, port] = s.split('/');
                return { containerPort: Number(port), hostPort: Number(port), protocol, hostIP };
              }),
            },
          ],
        },
      );
    const cases: [string, string[], string[], boolean][] = [
      ['other port', ['UDP/127.0.0.1/8080'], ['UDP/127.0.0.1/9090'], true],
      ['same udp port', ['UDP/127.0.0.1/8080'], ['UDP/127.0.0.1/8080'], false],
      ['same tcp port', ['TCP/127.0.0.1/8080'], ['TCP/127.0.0.1/8080'], false],
      ['different host ip', ['TCP/127.0.0.1/8080'], ['TCP/127.0.0.2/8080'], true],
      ['different protocol', ['UDP/127.0.0.1/8080'], ['TCP/127.0.0.1/8080'], true],
      [
        'second udp port conflict',
        ['UDP/127.0.0.1/8000', 'UDP/127.0.0.1/8080'],
        ['UDP/127.0.0.1/8080'],
        false,
      ],
      [
        'first tcp port conflict',
        ['TCP/127.0.0.1/8001', 'UDP/127.0.0.1/8080'],
        ['TCP/127.0.0.1/8001', 'UDP/127.0.0.1/8081'],
        false,
      ],
      ['first tcp port conflict due to 0.0.0.0 hostIP', ['TCP/0.0.0.0/8001'], ['TCP/127.0.0.1/8001'], false],
      [
        'TCP hostPort conflict due to 0.0.0.0 hostIP',
        ['TCP/10.0.10.10/8001', 'TCP/0.0.0.0/8001'],
        ['TCP/127.0.0.1/8001'],
        false,
      ],
      ['second tcp port conflict to 0.0.0.0 hostIP', ['TCP/127.0.0.1/8001'], ['TCP/0.0.0.0/8001'], false],
      ['second different protocol', ['UDP/127.0.0.1/8001'], ['TCP/0.0.0.0/8001'], true],
      [
        'UDP hostPort conflict due to 0.0.0.0 hostIP',
        ['UDP/127.0.0.1/8001'],
        ['TCP/0.0.0.0/8001', 'UDP/0.0.0.0/8001'],
        false,
      ],
      // An empty host IP and protocol mean 0.0.0.0 and TCP (HostPortInfo's sanitize).
      ['empty host IP is every address', ['TCP//8001'], ['TCP/127.0.0.1/8001'], false],
      ['empty protocol is TCP', ['/127.0.0.1/8001'], ['TCP/127.0.0.1/8001'], false],
    ];
    for (const [name, wanted, existing, admit] of cases) {
      it(name, () => {
        const r = admitPod({
          pod: withPorts('new', ...wanted),
          activePods: [withPorts('old', ...existing)],
          allocatable,
        });
        expect(r.admit).toBe(admit);
        const usage = new PodResourceUsage([withPorts('old', ...existing)]);
        expect(admitPod({ pod: withPorts('new', ...wanted), activePods: [], allocatable, usage }).admit).toBe(
          admit,
        );
      });
    }

    it('holds the ports of sidecars but not of init containers that run to completion (GetHostPorts)', () => {
      const port = (hostPort: number) => [{ containerPort: hostPort, hostPort }];
      const old = pod(
        'old',
        {},
        {
          initContainers: [
            { name: 'init', image: 'i', ports: port(7000) },
            { name: 'side', image: 'i', restartPolicy: 'Always', ports: port(7001) },
          ],
        },
      );
      const onlyContainer = (name: string, hostPort: number) =>
        pod(name, {}, { containers: [{ name: 'c', image: 'i', ports: port(hostPort) }] });
      expect(admitPod({ pod: onlyContainer('a', 7000), activePods: [old], allocatable }).admit).toBe(true);
      expect(admitPod({ pod: onlyContainer('b', 7001), activePods: [old], allocatable }).reason).toBe(
        'NodePorts',
      );
      // The new pod's own init container port is not checked either; its sidecar's is.
      const withInit = (c: Pod['spec']) => pod('n', {}, c ?? {});
      const initOnly = withInit({
        containers: [{ name: 'c', image: 'i' }],
        initContainers: [{ name: 'init', image: 'i', ports: port(7001) }],
      });
      expect(admitPod({ pod: initOnly, activePods: [old], allocatable }).admit).toBe(true);
      const sidecar = withInit({
        containers: [{ name: 'c', image: 'i' }],
        initContainers: [{ name: 'side', image: 'i', restartPolicy: 'Always', ports: port(7001) }],
      });
      expect(admitPod({ pod: sidecar, activePods: [old], allocatable }).reason).toBe('NodePorts');
    });
  });

  it('rejects a pod for another OS (rejectPodAdmissionBasedOnOSField / OSSelector)', () => {
    const windows = pod('w', {}, { os: { name: 'windows' } });
    expect(admitPod({ pod: windows, activePods: [], allocatable })).toEqual({
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    });
    expect(
      admitPod({ pod: pod('l', {}, { os: { name: 'linux' } }), activePods: [], allocatable }).admit,
    ).toBe(true);
    const labelled: Pod = {
      ...pod('s'),
      metadata: { name: 's', uid: 's', labels: { 'kubernetes.io/os': 'windows' } },
    };
    expect(admitPod({ pod: labelled, activePods: [], allocatable })).toEqual({
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    });
    // The OS checks come before the resource checks: preemption would not help them.
    expect(admitPod({ pod: windows, activePods: [pod('a'), pod('b'), pod('c')], allocatable }).reason).toBe(
      'PodOSNotSupported',
    );
  });

  describe('upstream generalFilter and the sysctl handler', () => {
    const node: NodeInfo = {
      name: 'node-a',
      labels: { 'kubernetes.io/hostname': 'node-a', disk: 'ssd' },
      taints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }],
    };
    const full = {
      ...allocatable,
      ephemeralStorage: 10 * 2 ** 30,
      scalarResources: { 'example.com/foo': 2, 'hugepages-2Mi': 0 },
    };
    const admit = (p: Pod, active: Pod[] = []) =>
      admitPod({
        pod: p,
        activePods: active,
        allocatable: full,
        node,
        sysctls: SysctlAllowlist.forNode([], '6.1.0'),
      });
    const tolerant = { tolerations: [{ key: 'dedicated', operator: 'Exists' as const }] };

    it('admits a pod that fits, tolerates and matches', () => {
      expect(admit(pod('ok', { cpu: '100m' }, { nodeSelector: { disk: 'ssd' }, ...tolerant }))).toEqual({
        admit: true,
      });
    });

    it('refuses an unsafe sysctl before anything else', () => {
      const p = pod(
        's',
        { cpu: '100' },
        { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } },
      );
      expect(admit(p)).toEqual({
        admit: false,
        reason: 'SysctlForbidden',
        message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
      });
    });

    it('refuses an untolerated NoExecute taint, but not for static pods', () => {
      expect(admit(pod('t'))).toEqual({
        admit: false,
        reason: 'TaintToleration',
        message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
      });
      const staticPod: Pod = {
        ...pod('st'),
        metadata: { name: 'st', uid: 'st', annotations: { 'kubernetes.io/config.source': 'file' } },
      };
      expect(admit(staticPod).admit).toBe(true);
      expect(admit(pod('v', {}, { tolerations: [{ key: 'dedicated', value: 'other' }] })).reason).toBe(
        'TaintToleration',
      );
    });

    it('refuses a nodeSelector or node affinity the node does not match', () => {
      expect(admit(pod('n', {}, { nodeSelector: { disk: 'hdd' }, ...tolerant }))).toEqual({
        admit: false,
        reason: 'NodeAffinity',
        message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      });
    });

    it('refuses a pod bound to another node', () => {
      expect(admit(pod('b', {}, { nodeName: 'node-b', ...tolerant }))).toEqual({
        admit: false,
        reason: 'NodeName',
        message: "Predicate NodeName failed: node(s) didn't match the requested node name",
      });
      expect(admit(pod('b', {}, { nodeName: 'node-a', ...tolerant })).admit).toBe(true);
    });

    it('compares ephemeral-storage, extended resources and hugepages with allocatable', () => {
      expect(admit(pod('e', { 'ephemeral-storage': '20Gi' }, tolerant))).toEqual({
        admit: false,
        reason: 'OutOfephemeral-storage',
        message: `Node didn't have enough resource: ephemeral-storage, requested: ${20 * 2 ** 30}, used: 0, capacity: ${10 * 2 ** 30}`,
      });
      const foo = (name: string, n: string) => pod(name, { 'example.com/foo': n }, tolerant);
      expect(admit(foo('f', '2')).admit).toBe(true);
      expect(admit(foo('g', '1'), [foo('f', '2')])).toEqual({
        admit: false,
        reason: 'OutOfexample.com/foo',
        message: "Node didn't have enough resource: example.com/foo, requested: 1, used: 2, capacity: 2",
      });
      // An extended resource the node does not list is a cluster-level one: not checked.
      expect(admit(pod('u', { 'example.com/unknown': '5' }, tolerant)).admit).toBe(true);
      expect(admit(pod('h', { 'hugepages-2Mi': '2Mi' }, tolerant)).reason).toBe('OutOfhugepages-2Mi');
      expect(admit(pod('h1', { 'hugepages-1Gi': '1Gi' }, tolerant))).toMatchObject({
        reason: 'OutOfhugepages-1Gi',
        message: `Node didn't have enough resource: hugepages-1Gi, requested: ${2 ** 30}, used: 0, capacity: 0`,
      });
    });

    it('reports resources first, then NodeAffinity, NodeName, NodePorts, taints', () => {
      const all = pod('x', { cpu: '100' }, { nodeSelector: { disk: 'hdd' }, nodeName: 'node-b' });
      expect(admit(all).reason).toBe('OutOfcpu');
      expect(admit(pod('y', {}, { nodeSelector: { disk: 'hdd' }, nodeName: 'node-b' })).reason).toBe(
        'NodeAffinity',
      );
      expect(admit(pod('z', {}, { nodeName: 'node-b' })).reason).toBe('NodeName');
    });

    it('keeps what admitted pods hold in PodResourceUsage', () => {
      const usage = new PodResourceUsage([pod('a', { 'example.com/foo': '1', 'ephemeral-storage': '1Gi' })]);
      expect(usage.scalar('example.com/foo')).toBe(1);
      expect(usage.ephemeralStorage).toBe(2 ** 30);
    });
  });
});
