import type { Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  isDNS1123Label,
  isDNS1123Subdomain,
  PodValidationError,
  podFieldErrors,
  setPodDefaults,
  validatePod,
} from '../src/index.js';

function validPod(): Pod {
  return setPodDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
    spec: {
      initContainers: [{ name: 'init', image: 'busybox:1' }],
      containers: [
        {
          name: 'app',
          image: 'nginx:1',
          ports: [{ name: 'http', containerPort: 80 }],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
          livenessProbe: { httpGet: { port: 'http' } },
          resources: { limits: { cpu: '500m', memory: '128Mi' } },
        },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  });
}

type Mutation = (pod: Pod) => void;
const spec = (p: Pod) => p.spec!;
const app = (p: Pod) => p.spec!.containers[0]!;

const cases: [string, Mutation, string, string][] = [
  ['name not DNS-1123', (p) => (p.metadata!.name = 'Web_1'), 'metadata.name', 'Invalid value'],
  ['namespace not a label', (p) => (p.metadata!.namespace = 'a.b'), 'metadata.namespace', 'Invalid value'],
  ['bad label key', (p) => (p.metadata!.labels = { 'a b': 'x' }), 'metadata.labels["a b"]', 'Invalid value'],
  ['no containers', (p) => (spec(p).containers = []), 'spec.containers', 'Required value'],
  ['container name not a label', (p) => (app(p).name = 'App'), 'spec.containers[0].name', 'Invalid value'],
  [
    'container name repeats an init container',
    (p) => (app(p).name = 'init'),
    'spec.containers[0].name',
    'Duplicate value',
  ],
  ['empty image', (p) => (app(p).image = ''), 'spec.containers[0].image', 'Required value'],
  // validateContainersOnlyForPod: an image that is only blanks is not empty, but it has
  // leading/trailing whitespace, which pods (not templates) may not have.
  ['blank image', (p) => (app(p).image = '  '), 'spec.containers[0].image', 'Invalid value'],
  [
    'image with a trailing blank',
    (p) => (app(p).image = 'nginx:1 '),
    'spec.containers[0].image',
    'Invalid value',
  ],
  [
    'init image with a leading blank',
    (p) => (spec(p).initContainers![0]!.image = ' busybox:1'),
    'spec.initContainers[0].image',
    'Invalid value',
  ],
  [
    'one host port twice in one init container',
    (p) =>
      (spec(p).initContainers![0]!.ports = [
        { containerPort: 80, hostPort: 8080 },
        { containerPort: 81, hostPort: 8080 },
      ]),
    'spec.initContainers[0].ports[1].hostPort',
    'Duplicate value',
  ],
  [
    'one host port in two regular containers',
    (p) => {
      app(p).ports = [{ containerPort: 80, hostPort: 8080 }];
      spec(p).containers.push({ name: 'side', image: 'x:1', ports: [{ containerPort: 81, hostPort: 8080 }] });
    },
    'spec.containers[1].ports[0].hostPort',
    'Duplicate value',
  ],
  [
    'containerPort 0',
    (p) => (app(p).ports = [{ containerPort: 0 }]),
    'spec.containers[0].ports[0].containerPort',
    'Required value',
  ],
  [
    'containerPort too big',
    (p) => (app(p).ports = [{ containerPort: 70000 }]),
    'spec.containers[0].ports[0].containerPort',
    'Invalid value',
  ],
  [
    'port name too long',
    (p) => (app(p).ports = [{ name: 'a-very-long-port-name', containerPort: 1 }]),
    'spec.containers[0].ports[0].name',
    'Invalid value',
  ],
  [
    'duplicate port names',
    (p) =>
      (app(p).ports = [
        { name: 'http', containerPort: 1 },
        { name: 'http', containerPort: 2 },
      ]),
    'spec.containers[0].ports[1].name',
    'Duplicate value',
  ],
  [
    'hostPort differs under hostNetwork',
    (p) => {
      spec(p).hostNetwork = true;
      app(p).ports = [{ containerPort: 80, hostPort: 81 }];
    },
    // validatePodHostNetworkDeps reports the hostPort.
    'spec.containers[0].ports[0].hostPort',
    'Invalid value',
  ],
  [
    // validateSleepAction: a preStop sleep may not outlast the pod's grace period (30 s default).
    'preStop sleep longer than the grace period',
    (p) => (app(p).lifecycle = { preStop: { sleep: { seconds: 31 } } }),
    'spec.containers[0].lifecycle.preStop.sleep',
    'Invalid value',
  ],
  [
    'negative preStop sleep',
    (p) => (app(p).lifecycle = { preStop: { sleep: { seconds: -1 } } }),
    'spec.containers[0].lifecycle.preStop.sleep',
    'Invalid value',
  ],
  [
    'duplicate volume names',
    (p) => spec(p).volumes!.push({ name: 'data', emptyDir: {} }),
    'spec.volumes[1].name',
    'Duplicate value',
  ],
  [
    'two volume types',
    (p) => (spec(p).volumes![0]!.hostPath = { path: '/x' }),
    'spec.volumes[0].hostPath',
    'Forbidden',
  ],
  [
    'mount of an undeclared volume',
    (p) => (app(p).volumeMounts = [{ name: 'nope', mountPath: '/x' }]),
    'spec.containers[0].volumeMounts[0].name',
    'Not found',
  ],
  [
    'two mounts at one path',
    (p) =>
      (app(p).volumeMounts = [
        { name: 'data', mountPath: '/x' },
        { name: 'data', mountPath: '/x' },
      ]),
    'spec.containers[0].volumeMounts[1].mountPath',
    'Invalid value',
  ],
  [
    'subPath escapes',
    (p) => (app(p).volumeMounts = [{ name: 'data', mountPath: '/x', subPath: '../etc' }]),
    'spec.containers[0].volumeMounts[0].subPath',
    'Invalid value',
  ],
  [
    'unknown restart policy',
    (p) => (spec(p).restartPolicy = 'Sometimes'),
    'spec.restartPolicy',
    'Unsupported value',
  ],
  [
    'probe without a handler',
    (p) => (app(p).livenessProbe = { periodSeconds: 5 }),
    'spec.containers[0].livenessProbe',
    'Required value',
  ],
  [
    'probe with two handlers',
    (p) => (app(p).readinessProbe = { exec: { command: ['true'] }, tcpSocket: { port: 80 } }),
    'spec.containers[0].readinessProbe.tcpSocket',
    'Forbidden',
  ],
  [
    'liveness successThreshold other than 1',
    (p) => (app(p).livenessProbe = { exec: { command: ['true'] }, successThreshold: 2 }),
    'spec.containers[0].livenessProbe.successThreshold',
    'Invalid value',
  ],
  [
    'probe port out of range',
    (p) => (app(p).livenessProbe = { tcpSocket: { port: 0 } }),
    'spec.containers[0].livenessProbe.tcpSocket.port',
    'Invalid value',
  ],
  [
    'preStop without a handler',
    (p) => (app(p).lifecycle = { preStop: {} }),
    'spec.containers[0].lifecycle.preStop',
    'Required value',
  ],
  [
    'exec without a command',
    (p) => (app(p).lifecycle = { postStart: { exec: {} } }),
    'spec.containers[0].lifecycle.postStart.exec.command',
    'Required value',
  ],
  [
    'quantity that does not parse',
    (p) => (app(p).resources = { limits: { cpu: 'lots' } }),
    'spec.containers[0].resources.limits.cpu',
    'Invalid value',
  ],
  [
    'negative quantity',
    (p) => (app(p).resources = { requests: { cpu: '-1' } }),
    'spec.containers[0].resources.requests["cpu"]',
    'Invalid value',
  ],
  [
    'request above limit',
    (p) => (app(p).resources = { limits: { memory: '1Gi' }, requests: { memory: '2Gi' } }),
    'spec.containers[0].resources.requests["memory"]',
    'Invalid value',
  ],
  [
    'probe on a plain init container',
    (p) => (spec(p).initContainers![0]!.readinessProbe = { exec: { command: ['x'] } }),
    'spec.initContainers[0].readinessProbe',
    'Forbidden',
  ],
  [
    'restartPolicy on a regular container',
    (p) => (app(p).restartPolicy = 'Always'),
    'spec.containers[0].restartPolicy',
    'Forbidden',
  ],
  [
    'a grace period on a readiness probe',
    (p) => (app(p).readinessProbe = { exec: { command: ['x'] }, terminationGracePeriodSeconds: 5 }),
    'spec.containers[0].readinessProbe.terminationGracePeriodSeconds',
    'Invalid value',
  ],
  [
    'dnsPolicy None without dnsConfig',
    (p) => (spec(p).dnsPolicy = 'None'),
    'spec.dnsConfig',
    'Required value',
  ],
  [
    'env name with =',
    (p) => (app(p).env = [{ name: 'A=B', value: '1' }]),
    'spec.containers[0].env[0].name',
    'Invalid value',
  ],
  [
    'negative grace period',
    (p) => (spec(p).terminationGracePeriodSeconds = -1),
    'spec.terminationGracePeriodSeconds',
    'Invalid value',
  ],
  [
    'defaultMode above 0777',
    (p) => (spec(p).volumes = [{ name: 'data', downwardAPI: { defaultMode: 0o1777 } }]),
    'spec.volumes[0].downwardAPI.defaultMode',
    'Invalid value',
  ],
  // The structural part comes from the OpenAPI schema (kubernetes-models).
  [
    'a port that is not a number',
    (p) => (app(p).ports = [{ containerPort: 'x' as unknown as number }]),
    'spec.containers[0].ports[0].containerPort',
    'Invalid value',
  ],
  [
    'an image that is not a string',
    (p) => (app(p).image = 5 as unknown as string),
    'spec.containers[0].image',
    'Invalid value',
  ],
  [
    'a container without a name',
    (p) => delete (app(p) as { name?: string }).name,
    'spec.containers[0].name',
    'Required value',
  ],
];

describe('validatePod', () => {
  it('accepts a valid pod', () => {
    expect(validatePod(validPod(), { source: 'api' })).toBeUndefined();
  });

  // kubernetes-models 4.5 has the 1.33 schema, without additionalProperties: the 1.34 fields pass
  // unchecked, and the 1.31-1.33 ones the agent reads are checked.
  it('accepts the fields of v1.31-v1.34 pods', () => {
    const pod = validPod();
    const spec = pod.spec ?? { containers: [] };
    spec.resources = { limits: { cpu: '1', memory: '64Mi' } };
    spec.hostnameOverride = 'other';
    spec.securityContext = { supplementalGroupsPolicy: 'Strict', seLinuxChangePolicy: 'MountOption' };
    app(pod).lifecycle = { stopSignal: 'SIGUSR1' };
    app(pod).restartPolicyRules = [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }];
    app(pod).env = [{ name: 'A', valueFrom: { fileKeyRef: { volumeName: 'v', path: 'env', key: 'A' } } }];
    spec.volumes = [
      ...(spec.volumes ?? []),
      { name: 'v', emptyDir: {} },
      { name: 'img', image: { reference: 'example.com/data:1', pullPolicy: 'IfNotPresent' } },
    ];
    expect(validatePod(pod, { source: 'api' })).toBeUndefined();
    spec.securityContext = { supplementalGroupsPolicy: 'Sometimes' };
    expect(validatePod(pod, { source: 'api' })?.field).toBe('spec.securityContext.supplementalGroupsPolicy');
  });

  // Only a create forbids ephemeral containers; a bound pod from the API server may have them.
  it('accepts ephemeral containers and scheduling gates on an existing pod', () => {
    const pod = validPod();
    pod.spec!.ephemeralContainers = [{ name: 'debug', image: 'busybox:1' }];
    pod.spec!.schedulingGates = [{ name: 'example.com/gate' }];
    expect(podFieldErrors(pod)).toEqual([]);
  });

  it('accepts a sidecar (restartable init container) with probes', () => {
    const pod = validPod();
    pod.spec!.initContainers![0] = {
      ...pod.spec!.initContainers![0]!,
      restartPolicy: 'Always',
      readinessProbe: { exec: { command: ['x'] } },
    };
    expect(podFieldErrors(pod)).toEqual([]);
  });

  // validateInitContainers checks host ports per init container (they run one at a time), apart
  // from the regular containers' shared check.
  it('accepts a host port used by an init container and again by a later one or a regular container', () => {
    const pod = validPod();
    pod.spec!.initContainers = [
      { name: 'init', image: 'busybox:1', ports: [{ containerPort: 80, hostPort: 8080 }] },
      { name: 'init2', image: 'busybox:1', ports: [{ containerPort: 80, hostPort: 8080 }] },
    ];
    pod.spec!.containers[0]!.ports = [{ containerPort: 80, hostPort: 8080 }];
    expect(podFieldErrors(pod)).toEqual([]);
  });

  it('accepts the same container port on an init and a regular container under hostNetwork', () => {
    const pod = setPodDefaults({
      metadata: { name: 'etcd', namespace: 'kube-system' },
      spec: {
        hostNetwork: true,
        initContainers: [{ name: 'prep', image: 'etcd:3', ports: [{ containerPort: 2379 }] }],
        containers: [{ name: 'etcd', image: 'etcd:3', ports: [{ containerPort: 2379 }] }],
      },
    });
    expect(podFieldErrors(pod)).toEqual([]);
  });

  it('under hostNetwork checks only host ports that are set (validateHostNetwork skips a zero one)', () => {
    // Not defaulted: the port has no hostPort, which is no mismatch.
    const pod = validPod();
    spec(pod).hostNetwork = true;
    app(pod).ports = [{ containerPort: 8080 }];
    expect(podFieldErrors(pod).filter((e) => e.field.endsWith('hostPort'))).toEqual([]);
    app(pod).ports = [{ containerPort: 8080, hostPort: 9090 }];
    expect(podFieldErrors(pod).map((e) => e.field)).toContain('spec.containers[0].ports[0].hostPort');
  });

  it('accepts a preStop sleep of zero or of exactly the grace period', () => {
    for (const seconds of [0, 30]) {
      const pod = validPod();
      pod.spec!.containers[0]!.lifecycle = { preStop: { sleep: { seconds } } };
      expect(podFieldErrors(pod)).toEqual([]);
    }
    const longer = validPod();
    longer.spec!.terminationGracePeriodSeconds = 120;
    longer.spec!.containers[0]!.lifecycle = { preStop: { sleep: { seconds: 60 } } };
    expect(podFieldErrors(longer)).toEqual([]);
  });

  // validatePodHostNetworkDeps looks at the regular containers only.
  it('leaves an init container host port alone under hostNetwork', () => {
    const pod = validPod();
    pod.spec!.hostNetwork = true;
    pod.spec!.containers[0]!.ports = [{ containerPort: 80, hostPort: 80 }];
    pod.spec!.initContainers![0]!.ports = [{ containerPort: 80, hostPort: 8080 }];
    expect(podFieldErrors(pod)).toEqual([]);
  });

  it.each(cases)('rejects %s', (_title, mutate, field, type) => {
    const pod = validPod();
    mutate(pod);
    const errors = podFieldErrors(pod);
    expect(errors.map((e) => [e.field, e.type])).toContainEqual([field, type]);
  });

  it('names the source, file, pod and field in the error and its message', () => {
    const pod = validPod();
    pod.spec!.containers[0]!.image = '';
    const error = validatePod(pod, { source: 'file', file: '/etc/kubernetes/manifests/web.yaml' });
    expect(error).toBeInstanceOf(PodValidationError);
    expect(error).toMatchObject({
      code: 'FailedValidation',
      source: 'file',
      file: '/etc/kubernetes/manifests/web.yaml',
      object: { namespace: 'default', name: 'web' },
      field: 'spec.containers[0].image',
    });
    for (const part of [
      'file',
      '/etc/kubernetes/manifests/web.yaml',
      'default/web',
      'spec.containers[0].image',
    ]) {
      expect(error?.message).toContain(part);
    }
  });

  it('names the url for http pods', () => {
    const pod = validPod();
    pod.spec!.restartPolicy = 'Maybe';
    const error = validatePod(pod, { source: 'http', url: 'http://m/pods' });
    expect(error?.url).toBe('http://m/pods');
    expect(error?.message).toContain('http://m/pods');
  });

  it('rejects non-objects without throwing', () => {
    for (const value of [null, 1, 'pod', [], true]) {
      expect(validatePod(value, { source: 'api' })?.field).toBe('<root>');
    }
  });

  it('checks DNS-1123 names', () => {
    expect(isDNS1123Label('a-b-1')).toBe(true);
    expect(isDNS1123Label('-a')).toBe(false);
    expect(isDNS1123Label('a'.repeat(64))).toBe(false);
    expect(isDNS1123Subdomain('a.b-c.d')).toBe(true);
    expect(isDNS1123Subdomain('a..b')).toBe(false);
  });
});
