// Upstream k8s.io/component-helpers/resource helpers_test.go: TestPodResourceLimits (the cases
// over the spec; those reading container statuses are in-place resize, not read here) and
// TestIsPodLevelResourcesSet.
import {
  type Container,
  isPodLevelLimitsSet,
  isPodLevelResourcesSet,
  type Pod,
  type PodResourcesOptions,
  podLimits,
  type ResourceRequirements,
} from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';

const GiB = 2 ** 30;

function ctr(limits?: Record<string, string>, sidecar = false): Container {
  return {
    name: 'c',
    ...(limits ? { resources: { limits } } : {}),
    ...(sidecar ? { restartPolicy: 'Always' } : {}),
  };
}

function pod(
  containers: Container[],
  initContainers: Container[] = [],
  overhead?: Record<string, string>,
  resources?: ResourceRequirements,
): Pod {
  return {
    spec: {
      containers,
      initContainers,
      ...(overhead ? { overhead } : {}),
      ...(resources ? { resources } : {}),
    },
  };
}

const limitsCases: [string, Pod, PodResourcesOptions, Record<string, number>][] = [
  ['nil options, larger init container', pod([ctr({ cpu: '1' })], [ctr({ cpu: '4' })]), {}, { cpu: 4 }],
  [
    'nil options, larger containers',
    pod([ctr({ cpu: '2' }), ctr({ cpu: '3' })], [ctr({ cpu: '2' })]),
    {},
    { cpu: 5 },
  ],
  [
    'pod overhead excluded',
    pod([ctr({ cpu: '2' }), ctr({ cpu: '3' })], [ctr({ cpu: '2' })], { cpu: '1' }),
    { excludeOverhead: true },
    { cpu: 5 },
  ],
  [
    // Overhead is only added to limits that are set: no memory limit results.
    'pod overhead included',
    pod([ctr({ cpu: '2' }), ctr({ cpu: '3' })], [ctr({ cpu: '2' })], { cpu: '1', memory: '1Gi' }),
    {},
    { cpu: 6 },
  ],
  ['no limited containers should result in no limits for the pod', pod([ctr()]), {}, {}],
  [
    "one limited and one unlimited container should result in the limited container's limits for the pod",
    pod([ctr({ cpu: '2', memory: '2Gi' }), ctr()]),
    {},
    { cpu: 2, memory: 2 * GiB },
  ],
  [
    "one limited and one unlimited init container should result in the limited init container's limits for the pod",
    pod([ctr({ cpu: '1', memory: '1Gi' })], [ctr({ cpu: '2', memory: '2Gi' }), ctr()]),
    {},
    { cpu: 2, memory: 2 * GiB },
  ],
  ['restartable init container', pod([ctr({ cpu: '1' })], [ctr({ cpu: '1' }, true)]), {}, { cpu: 2 }],
  [
    // max(5, restartable init containers (3+2+1) + regular (1)) = 7
    'multiple restartable init containers',
    pod(
      [ctr({ cpu: '1' })],
      [ctr({ cpu: '5' }), ctr({ cpu: '1' }, true), ctr({ cpu: '2' }, true), ctr({ cpu: '3' }, true)],
    ),
    {},
    { cpu: 7 },
  ],
  [
    // init-2 needs 5 + the sidecars started before it (1+2) = 8; the one after it does not count.
    'multiple restartable and regular init containers',
    pod(
      [ctr({ cpu: '1' })],
      [
        ctr({ cpu: '5' }),
        ctr({ cpu: '1' }, true),
        ctr({ cpu: '2' }, true),
        ctr({ cpu: '5' }),
        ctr({ cpu: '3' }, true),
      ],
    ),
    {},
    { cpu: 8 },
  ],
  [
    'restartable-init, init and regular',
    pod([ctr({ cpu: '100' })], [ctr({ cpu: '10' }, true), ctr({ cpu: '200' })]),
    {},
    { cpu: 210 },
  ],
  // Pod-level resources (PodLevelResources, beta in v1.34) replace the containers' aggregate.
  [
    'pod-level limits replace the containers',
    pod([ctr({ cpu: '1', memory: '1Gi' })], [], { memory: '1Gi' }, { limits: { memory: '4Gi' } }),
    {},
    { cpu: 1, memory: 5 * GiB },
  ],
  [
    'pod-level limits skipped',
    pod([ctr({ memory: '1Gi' })], [], undefined, { limits: { memory: '4Gi' } }),
    { skipPodLevelResources: true },
    { memory: GiB },
  ],
  [
    'unsupported pod-level limits are ignored',
    pod([ctr({ memory: '1Gi' })], [], undefined, { limits: { 'ephemeral-storage': '1Gi' } }),
    {},
    { memory: GiB },
  ],
];

describe('podLimits (upstream PodLimits)', () => {
  it.each(limitsCases)('%s', (_name, p, options, expected) => {
    expect(podLimits(p, options)).toEqual(expected);
  });

  it('tells containerFn of every container and init container', () => {
    const seen: string[] = [];
    podLimits(pod([ctr({ memory: '1Gi' }), ctr()], [ctr({ cpu: '1' })]), {
      containerFn: (list, type) => seen.push(`${type}:${Object.keys(list).join(',')}`),
    });
    expect(seen).toEqual(['containers:memory', 'containers:', 'initContainers:cpu']);
  });
});

describe('isPodLevelResourcesSet (upstream TestIsPodLevelResourcesSet)', () => {
  const cases: [string, ResourceRequirements | undefined, boolean][] = [
    ['nil resources struct', undefined, false],
    ['empty resources struct', {}, false],
    ['only unsupported resource requests set', { requests: { 'ephemeral-storage': '1Mi' } }, false],
    ['only unsupported resource limits set', { limits: { 'ephemeral-storage': '1Mi' } }, false],
    [
      'unsupported and supported resources requests set',
      { requests: { 'ephemeral-storage': '1Mi', cpu: '1' } },
      true,
    ],
    [
      'unsupported and supported resources limits set',
      { limits: { 'ephemeral-storage': '1Mi', cpu: '1' } },
      true,
    ],
    ['supported resource limits set', { limits: { cpu: '1', memory: '1Mi' } }, true],
    ['supported resource requests set', { requests: { cpu: '1', memory: '1Mi' } }, true],
  ];
  it.each(cases)('%s', (_name, resources, expected) => {
    expect(isPodLevelResourcesSet(pod([], [], undefined, resources))).toBe(expected);
  });

  it('isPodLevelLimitsSet looks at limits only', () => {
    expect(isPodLevelLimitsSet(pod([], [], undefined, { requests: { memory: '1Gi' } }))).toBe(false);
    expect(isPodLevelLimitsSet(pod([], [], undefined, { limits: { memory: '1Gi' } }))).toBe(true);
  });
});
