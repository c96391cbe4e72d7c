import type { Container, Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { expand, mappingFuncFor } from '../src/expansion.js';
import { getStableKey } from '../src/helpers.js';
import { hashContainer } from '../src/index.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
  newPodLabels,
} from '../src/labels.js';
import { computePodQOS, getContainerOOMScoreAdjust } from '../src/qos.js';
import { calculateLinuxResources, milliCPUToQuota, milliCPUToShares } from '../src/resources.js';

describe('hashContainer', () => {
  it('matches upstream TestConsistentHashContainer (v1.31+: 0x8e45cbd0)', () => {
    // The full sample container of upstream's test: only name and image are hashed.
    const container: Container = {
      name: 'test_container',
      image: 'foo/image:v1',
      command: ['/bin/testcmd'],
      args: ['/bin/sh', '-c', 'echo abc'],
      ports: [{ containerPort: 8001 }],
      env: [{ name: 'ENV_FOO', value: 'bar' }],
      resources: { limits: { foo: '1G' }, requests: { foo: '500M' } },
    };
    expect(hashContainer(container)).toBe('8e45cbd0');
  });

  it('changes with the image and the name only', () => {
    const a = hashContainer({ name: 'a', image: 'busybox' });
    expect(hashContainer({ name: 'a', image: 'busybox:2' })).not.toBe(a);
    expect(hashContainer({ name: 'b', image: 'busybox' })).not.toBe(a);
    expect(hashContainer({ name: 'a', image: 'busybox', args: ['x'] } as Container)).toBe(a);
  });

  it('is part of the crash-loop key', () => {
    const pod: Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' } };
    const c = { name: 'c', image: 'i' };
    expect(getStableKey(pod, c)).toBe(`p_ns_u_c_${hashContainer(c)}`);
  });
});

describe('expand', () => {
  const mapping = mappingFuncFor(
    new Map([
      ['VAR_A', 'A'],
      ['VAR_EMPTY', ''],
    ]),
  );
  it.each([
    ['$(VAR_A)', 'A'],
    ['___$(VAR_A)___', '___A___'],
    ['$(VAR_A)-$(VAR_A)', 'A-A'],
    ['$(VAR_EMPTY)', ''],
    ['$(UNKNOWN)', '$(UNKNOWN)'],
    ['$$(VAR_A)', '$(VAR_A)'],
    ['$$$(VAR_A)', '$A'],
    ['$$$$(VAR_A)', '$$(VAR_A)'],
    ['$(VAR_A', '$(VAR_A'],
    ['$VAR_A', '$VAR_A'],
    ['$', '$'],
    ['foo$', 'foo$'],
    ['$()', '$()'],
  ])('%s → %s', (input, output) => {
    expect(expand(input, mapping)).toBe(output);
  });
});

describe('QoS and OOM score', () => {
  const pod = (containers: Container[]): Pod => ({
    metadata: { name: 'p', namespace: 'n', uid: 'u' },
    spec: { containers },
  });
  it('classifies pods', () => {
    expect(computePodQOS(pod([{ name: 'a' }]))).toBe('BestEffort');
    expect(computePodQOS(pod([{ name: 'a', resources: { limits: { cpu: '1', memory: '1Gi' } } }]))).toBe(
      'Guaranteed',
    );
    expect(
      computePodQOS(
        pod([
          {
            name: 'a',
            resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
          },
        ]),
      ),
    ).toBe('Guaranteed');
    expect(
      computePodQOS(
        pod([{ name: 'a', resources: { requests: { cpu: '500m' }, limits: { cpu: '1', memory: '1Gi' } } }]),
      ),
    ).toBe('Burstable');
    expect(computePodQOS(pod([{ name: 'a', resources: { requests: { memory: '1Gi' } } }]))).toBe('Burstable');
  });
  it('gives upstream OOM score adjustments', () => {
    const cap = 4 * 2 ** 30;
    const g = pod([{ name: 'a', resources: { limits: { cpu: '1', memory: '1Gi' } } }]);
    expect(getContainerOOMScoreAdjust(g, g.spec!.containers[0]!, cap)).toBe(-997);
    const be = pod([{ name: 'a' }]);
    expect(getContainerOOMScoreAdjust(be, be.spec!.containers[0]!, cap)).toBe(1000);
    const b = pod([{ name: 'a', resources: { requests: { memory: '1Gi' } } }]);
    expect(getContainerOOMScoreAdjust(b, b.spec!.containers[0]!, cap)).toBe(750);
    const b0 = pod([{ name: 'a', resources: { requests: { cpu: '1' } } }]);
    expect(getContainerOOMScoreAdjust(b0, b0.spec!.containers[0]!, cap)).toBe(999);
    const bAll = pod([{ name: 'a', resources: { requests: { memory: '4Gi' }, limits: { memory: '8Gi' } } }]);
    expect(getContainerOOMScoreAdjust(bAll, bAll.spec!.containers[0]!, cap)).toBe(3);
  });
});

describe('cpu', () => {
  it('converts milli-CPU to shares and quota as upstream', () => {
    expect(milliCPUToShares(0)).toBe(2);
    expect(milliCPUToShares(1)).toBe(2);
    expect(milliCPUToShares(100)).toBe(102);
    expect(milliCPUToShares(1000)).toBe(1024);
    expect(milliCPUToShares(500000)).toBe(262144);
    expect(milliCPUToQuota(0, 100000)).toBe(0);
    expect(milliCPUToQuota(5, 100000)).toBe(1000);
    expect(milliCPUToQuota(250, 100000)).toBe(25000);
    expect(milliCPUToQuota(1500, 50000)).toBe(75000);
  });
  it('uses the limit for shares when no request is given', () => {
    expect(
      calculateLinuxResources({ name: 'a', resources: { limits: { cpu: '500m', memory: '128Mi' } } }),
    ).toEqual({
      cpuShares: 512,
      cpuQuota: 50000,
      cpuPeriod: 100000,
      memoryLimitInBytes: 128 * 2 ** 20,
    });
    expect(
      calculateLinuxResources(
        { name: 'a', resources: { requests: { cpu: '250m' } } },
        { cpuCFSQuota: false },
      ),
    ).toEqual({
      cpuShares: 256,
      cpuQuota: 0,
      cpuPeriod: 0,
      memoryLimitInBytes: 0,
    });
  });
});

describe('labels', () => {
  const pod: Pod = {
    metadata: { name: 'p', namespace: 'ns', uid: 'u', labels: { app: 'x' }, deletionGracePeriodSeconds: 5 },
    spec: { terminationGracePeriodSeconds: 30, containers: [] },
  };
  const container: Container = {
    name: 'c',
    image: 'busybox',
    ports: [{ containerPort: 80, protocol: 'TCP' }],
    lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 1'] } } },
  };
  it('round-trips through labels and annotations', () => {
    expect(newPodLabels(pod)).toEqual({
      app: 'x',
      'io.kubernetes.pod.name': 'p',
      'io.kubernetes.pod.namespace': 'ns',
      'io.kubernetes.pod.uid': 'u',
    });
    expect(getContainerInfoFromLabels(newContainerLabels(container, pod))).toEqual({
      podName: 'p',
      podNamespace: 'ns',
      podUid: 'u',
      containerName: 'c',
    });
    const a = getContainerInfoFromAnnotations(
      newContainerAnnotations(container, pod, 3, 'container', { 'io.kubernetes.container.hash': 'x' }),
    );
    expect(a).toEqual({
      hash: hashContainer(container),
      restartCount: 3,
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
      containerType: 'container',
      podDeletionGracePeriod: 5,
      podTerminationGracePeriod: 30,
      preStopHandler: container.lifecycle!.preStop,
      containerPorts: container.ports,
    });
  });
  it('reads missing or broken values as zero values', () => {
    expect(getContainerInfoFromAnnotations({ 'io.kubernetes.container.restartCount': 'x' })).toMatchObject({
      hash: '',
      restartCount: 0,
      containerPorts: [],
      preStopHandler: undefined,
    });
  });
});

describe('hashContainer bytes', () => {
  // The rendering upstream hashes, built the slow way for comparison.
  const reference = (name: string, image: string) => {
    const goEscape = (v: string) =>
      JSON.stringify(v).replace(
        /[<>&\u2028\u2029]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
      );
    const bytes = Buffer.from(`{"image":${goEscape(image)},"name":${goEscape(name)}}`, 'utf8');
    let h = 0x811c9dc5;
    for (const b of Buffer.from(`([]uint8)[${[...bytes].join(' ')}]`)) h = Math.imul(h ^ b, 0x01000193) >>> 0;
    return h.toString(16);
  };
  it.each([
    ['c', 'busybox'],
    ['ünïcode', 'registry.example.com/é:1'],
    ['x', 'a<b>&c'],
    ['', ''],
  ])('%s / %s', (name, image) => {
    expect(hashContainer({ name, image })).toBe(reference(name, image));
  });
});

describe('computePodActions and containers outside the spec', () => {
  it('kills a running container the spec does not name, keeping the others', async () => {
    const { computePodActions } = await import('../src/index.js');
    const pod: Pod = {
      metadata: { name: 'p', namespace: 'n', uid: 'u' },
      spec: { containers: [{ name: 'a', image: 'i' }] },
    };
    const mk = (name: string, state: 'running' | 'exited', image = 'i') => ({
      id: { type: 'containerd', id: name },
      name,
      state,
      createdAt: 1,
      startedAt: 1,
      finishedAt: 0,
      exitCode: 0,
      image,
      imageId: '',
      hash: hashContainer({ name, image }),
      restartCount: 0,
      reason: '',
      message: '',
    });
    const status = {
      id: 'u',
      name: 'p',
      namespace: 'n',
      ips: ['10.0.0.1'],
      timestamp: 0,
      sandboxStatuses: [
        {
          id: 's',
          name: 'p',
          namespace: 'n',
          uid: 'u',
          attempt: 0,
          state: 'ready' as const,
          createdAt: 1,
          ips: ['10.0.0.1'],
          hostNetwork: false,
          labels: {},
          annotations: {},
        },
      ],
      containerStatuses: [mk('a', 'running'), mk('old', 'running'), mk('dead', 'exited')],
    };
    const actions = computePodActions(pod, status);
    expect(actions.killPod).toBe(false);
    expect([...actions.containersToKill.values()].map((k) => [k.name, k.message])).toEqual([
      ['old', 'Container old is not in the pod spec'],
    ]);
  });
});
