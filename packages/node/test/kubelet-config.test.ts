import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentOptions } from '../src/agent.js';
import { parseFeatureGates } from '../src/feature-gates.js';
import { parseGoDuration } from '../src/go-duration.js';
import {
  applyKubeletConfig,
  connectedPendingOptions,
  KubeletConfigError,
  loadKubeletConfig,
  parseKubeletConfig,
} from '../src/kubelet-config.js';

const header = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const parse = (body: string, file = '/etc/kubelet-kit/config.yaml') =>
  parseKubeletConfig(header + body, file);
const errorOf = (body: string): KubeletConfigError => {
  try {
    parse(body);
  } catch (err) {
    if (err instanceof KubeletConfigError) return err;
    throw err;
  }
  throw new Error('no error');
};

describe('parseGoDuration (time.ParseDuration)', () => {
  it.each([
    ['0', 0],
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['500ms', 500],
    ['2h45m', 9_900_000],
    ['1000us', 1],
    ['1000000ns', 1],
    ['-2m', -120_000],
    ['+5s', 5000],
    ['.5s', 500],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 6);
  });
  it.each(['', '10', '10x', 's', '1m 30s', '.s', '1d', '--1s', '10S'])('%j is not a duration', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe('parseKubeletConfig', () => {
  it('maps the fields the agent has, from an upstream-like file', () => {
    const config = parse(`
staticPodPath: manifests
staticPodURL: http://10.0.0.1/pods
syncFrequency: 1m30s
fileCheckFrequency: 10s
address: 192.0.2.10
port: 10251
containerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock
maxPods: 50
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
resolvConf: /run/systemd/resolve/resolv.conf
allowedUnsafeSysctls: ["net.core.somaxconn", "kernel.msg*"]
podLogsDir: /var/log/pods
registerWithTaints:
  - key: dedicated
    value: edge
    effect: NoSchedule
  - key: gpu
    effect: NoExecute
`);
    expect(config.options).toEqual({
      podManifestPath: '/etc/kubelet-kit/manifests',
      manifestUrl: 'http://10.0.0.1/pods',
      syncFrequencyMs: 90_000,
      fileCheckFrequencyMs: 10_000,
      address: '192.0.2.10',
      port: 10251,
      runtimeEndpoint: 'unix:///run/k3s/containerd/containerd.sock',
      maxPods: 50,
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      resolvConf: '/run/systemd/resolve/resolv.conf',
      allowedUnsafeSysctls: ['net.core.somaxconn', 'kernel.msg*'],
      podLogsDirectory: '/var/log/pods',
      registerWithTaints: [
        { key: 'dedicated', value: 'edge', effect: 'NoSchedule' },
        { key: 'gpu', effect: 'NoExecute' },
      ],
    });
    expect(config.pending).toEqual({});
  });

  it('accepts the defaults kubeadm writes for fields the agent does not implement', () => {
    // The shape of `kubeadm config print init-defaults --component-configs KubeletConfiguration`,
    // less what asks for authentication, certificate rotation and the systemd cgroup driver.
    const config = parse(`
authentication:
  anonymous:
    enabled: true
  webhook:
    cacheTTL: 0s
    enabled: false
  x509:
    clientCAFile: ""
authorization:
  mode: AlwaysAllow
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
evictionHard:
  memory.available: 100Mi
  nodefs.available: 10%
  nodefs.inodesFree: 5%
  imagefs.available: 15%
  imagefs.inodesFree: 5%
`);
    // Zero durations are unset (upstream defaults them): the agent keeps its own defaults.
    expect(config.options).toEqual({
      podManifestPath: '/etc/kubernetes/manifests',
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': '10%',
        'nodefs.inodesFree': '5%',
        'imagefs.available': '15%',
        'imagefs.inodesFree': '5%',
      },
    });
    expect(config.logLevel).toBe('info');
  });

  it('reads the PENDING fields, with upstream defaulting of the report frequency', () => {
    const config = parse(`
registerNode: false
nodeStatusUpdateFrequency: 20s
systemReserved: { cpu: 500m, memory: 1Gi }
kubeReserved: { ephemeral-storage: 1Gi, pid: "1000" }
eventRecordQPS: 0
eventBurst: 20
nodeLeaseDurationSeconds: 60
`);
    expect(config.pending).toEqual({
      registerNode: false,
      nodeStatusUpdateFrequencyMs: 20_000,
      // Upstream: an explicit update frequency is the report frequency's default.
      nodeStatusReportFrequencyMs: 20_000,
      systemReserved: { cpu: '500m', memory: '1Gi' },
      kubeReserved: { 'ephemeral-storage': '1Gi', pid: '1000' },
      // *int32: an explicit 0 stays 0 (no limit), unlike a value field.
      eventQPS: 0,
      eventBurst: 20,
      nodeLeaseDurationSeconds: 60,
    });
    expect(parse('nodeStatusUpdateFrequency: 20s\nnodeStatusReportFrequency: 1m\n').pending).toMatchObject({
      nodeStatusReportFrequencyMs: 60_000,
    });
    expect(connectedPendingOptions).toEqual([
      'registerNode',
      'nodeStatusUpdateFrequencyMs',
      'nodeStatusReportFrequencyMs',
      'systemReserved',
      'kubeReserved',
      'eventQPS',
      'eventBurst',
      'nodeLeaseDurationSeconds',
    ]);
  });

  it('maps the eviction fields to their options', () => {
    const config = parse(`
evictionHard: { memory.available: 500Mi, nodefs.available: 5% }
evictionSoft: { memory.available: 1Gi }
evictionSoftGracePeriod: { memory.available: 1m30s }
evictionMinimumReclaim: { nodefs.available: 1Gi }
evictionPressureTransitionPeriod: 30s
evictionMaxPodGracePeriod: 20
`);
    expect(config.options).toEqual({
      evictionHard: { 'memory.available': '500Mi', 'nodefs.available': '5%' },
      evictionSoft: { 'memory.available': '1Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s' },
      evictionMinimumReclaim: { 'nodefs.available': '1Gi' },
      evictionPressureTransitionPeriodMs: 30_000,
      evictionMaxPodGracePeriod: 20,
    });
  });

  it("maps logging.verbosity to the log level (klog's V(4) and up is debug)", () => {
    expect(parse('logging: { verbosity: 4 }\n').logLevel).toBe('debug');
    expect(parse('logging: { verbosity: 2, format: json }\n').logLevel).toBe('info');
  });

  it.each([
    ['an unknown field', 'maxPod: 10\n', 'maxPod', 'unknown field'],
    [
      'an unknown nested field',
      'authentication: { anonymus: { enabled: true } }\n',
      'authentication.anonymus',
      'unknown field',
    ],
    ['a bad duration', 'syncFrequency: 10x\n', 'syncFrequency', 'invalid duration "10x"'],
    ['a duration as a number', 'syncFrequency: 10\n', 'syncFrequency', 'must be a duration'],
    ['a negative duration', 'fileCheckFrequency: -1s\n', 'fileCheckFrequency', 'must not be negative'],
    ['a string for a number', 'maxPods: "10"\n', 'maxPods', 'must be a whole number, got string "10"'],
    ['a fraction for a number', 'maxPods: 1.5\n', 'maxPods', 'must be a whole number'],
    ['a negative maxPods', 'maxPods: -1\n', 'maxPods', 'out of range'],
    ['a port out of range', 'port: 70000\n', 'port', 'out of range [1, 65535]'],
    ['a bool as a string', 'registerNode: "false"\n', 'registerNode', 'must be true or false'],
    ['an address that is no IP', 'address: localhost\n', 'address', 'not an IP address'],
    [
      'a cluster DNS that is no IP',
      'clusterDNS: [10.96.0.10, dns]\n',
      'clusterDNS',
      '"dns" is not an IP address',
    ],
    [
      'a list item of the wrong type',
      'allowedUnsafeSysctls: [1]\n',
      'allowedUnsafeSysctls[0]',
      'must be a string',
    ],
    ['a quantity as a number', 'systemReserved: { cpu: 1 }\n', 'systemReserved.cpu', 'must be a string'],
    ['a bad quantity', 'kubeReserved: { memory: 1GB }\n', 'kubeReserved', '"1GB" is not a quantity'],
    [
      'a resource that cannot be reserved',
      'kubeReserved: { gpu: "1" }\n',
      'kubeReserved',
      'cannot be reserved',
    ],
    [
      'a zero lease duration is the default, a negative one an error',
      'nodeLeaseDurationSeconds: -5\n',
      'nodeLeaseDurationSeconds',
      'out of range',
    ],
    [
      'a taint without effect',
      'registerWithTaints: [{ key: a }]\n',
      'registerWithTaints[0].effect',
      'must be NoSchedule',
    ],
    [
      'a taint without key',
      'registerWithTaints: [{ effect: NoSchedule }]\n',
      'registerWithTaints[0].key',
      'is required',
    ],
  ])('%s is an error naming the field', (_name, body, field, problem) => {
    const err = errorOf(body);
    expect(err.field).toBe(field);
    expect(err.file).toBe('/etc/kubelet-kit/config.yaml');
    expect(err.message).toContain(`/etc/kubelet-kit/config.yaml: ${field}: `);
    expect(err.message).toContain(problem);
  });

  it.each([
    ['rotateCertificates: true\n', 'rotateCertificates'],
    ['runtimeRequestTimeout: 10m\n', 'runtimeRequestTimeout'],
    ['httpCheckFrequency: 5s\n', 'httpCheckFrequency'],
    ['topologyManagerPolicy: single-numa-node\n', 'topologyManagerPolicy'],
    ['cpuManagerPolicy: static\n', 'cpuManagerPolicy'],
    ['imageServiceEndpoint: unix:///run/other.sock\n', 'imageServiceEndpoint'],
    ['logging: { vmodule: [{ filePattern: x, verbosity: 4 }] }\n', 'logging.vmodule'],
  ])('an unimplemented field set away from its default is refused: %s', (body, field) => {
    const err = errorOf(body);
    expect(err.field).toBe(field);
    expect(err.message).toContain('kubelet-kit does not implement');
  });

  it('maps the kubelet API TLS and auth fields to their flags, paths against the file', () => {
    const c = parse(`
readOnlyPort: 10255
tlsCertFile: pki/kubelet.crt
tlsPrivateKeyFile: /etc/pki/kubelet.key
tlsMinVersion: VersionTLS13
tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
authentication:
  x509: { clientCAFile: ca.crt }
  webhook: { enabled: true, cacheTTL: 1m }
  anonymous: { enabled: false }
authorization:
  mode: Webhook
  webhook: { cacheAuthorizedTTL: 10m, cacheUnauthorizedTTL: 5s }
`);
    expect(c.server).toEqual({
      readOnlyPort: 10255,
      tlsCertFile: '/etc/kubelet-kit/pki/kubelet.crt',
      tlsPrivateKeyFile: '/etc/pki/kubelet.key',
      tlsMinVersion: 'VersionTLS13',
      tlsCipherSuites: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'],
      clientCaFile: '/etc/kubelet-kit/ca.crt',
      authenticationTokenWebhook: true,
      authenticationTokenWebhookCacheTtl: 60_000,
      anonymousAuth: false,
      authorizationMode: 'Webhook',
      authorizationWebhookCacheAuthorizedTtl: 600_000,
      authorizationWebhookCacheUnauthorizedTtl: 5_000,
    });
    expect(parse('authentication: {}\n').server).toBeUndefined();
    expect(errorOf('authorization: { mode: RBAC }\n').field).toBe('authorization.mode');
    expect(errorOf('readOnlyPort: 70000\n').field).toBe('readOnlyPort');
  });

  it('maps the pod cgroup fields, refusing what is not implemented', () => {
    expect(
      parse(
        'cgroupsPerQOS: true\ncgroupDriver: systemd\ncgroupRoot: /edge\npodPidsLimit: 1024\nenforceNodeAllocatable: []\n',
      ).options,
    ).toMatchObject({
      cgroupsPerQOS: true,
      cgroupDriver: 'systemd',
      cgroupRoot: '/edge',
      podPidsLimit: 1024,
      enforceNodeAllocatable: [],
    });
    expect(errorOf('cgroupDriver: docker\n').message).toContain('is not one of cgroupfs, systemd');
    expect(errorOf('enforceNodeAllocatable: [pods, system-reserved]\n').field).toBe('enforceNodeAllocatable');
    expect(errorOf('podPidsLimit: -2\n').field).toBe('podPidsLimit');
  });

  it('accepts unimplemented fields at their defaults, and what the agent does', () => {
    expect(() =>
      parse(`
readOnlyPort: 0
serializeImagePulls: true
maxParallelImagePulls: 1
podPidsLimit: -1
runtimeRequestTimeout: 2m
httpCheckFrequency: 20s
enforceNodeAllocatable: [pods]
contentType: application/json
configMapAndSecretChangeDetectionStrategy: Cache
imageServiceEndpoint: unix:///run/containerd/containerd.sock
memorySwap: { swapBehavior: NoSwap }
featureGates: {}
`),
    ).not.toThrow();
  });

  it.each([
    ['not YAML', 'a: [', '', 'not YAML'],
    ['a list', '- a', '', 'must be a KubeletConfiguration object'],
    [
      'another apiVersion',
      'apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration',
      'apiVersion',
      'must be kubelet.config.k8s.io/v1beta1',
    ],
    [
      'another kind',
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod',
      'kind',
      'must be KubeletConfiguration',
    ],
    ['a duplicate key', `${header}maxPods: 1\nmaxPods: 2\n`, '', 'not YAML'],
  ])('refuses a file that is %s', (_name, text, field, problem) => {
    let err: unknown;
    try {
      parseKubeletConfig(text, 'c.yaml');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KubeletConfigError);
    expect((err as KubeletConfigError).field).toBe(field);
    expect((err as KubeletConfigError).message).toContain(problem);
  });

  it('reads JSON too, a null field being unset', () => {
    const config = parseKubeletConfig(
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        maxPods: 30,
        staticPodURL: null,
      }),
      'c.json',
    );
    expect(config.options).toEqual({ maxPods: 30 });
  });
});

describe('loadKubeletConfig and precedence', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-kubelet-config-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('names a file it cannot read', () => {
    expect(() => loadKubeletConfig(path.join(dir, 'missing.yaml'))).toThrow(/missing\.yaml: cannot read/);
  });

  it('resolves relative paths against the file', () => {
    const file = path.join(dir, 'config.yaml');
    fs.writeFileSync(file, `${header}staticPodPath: pods\npodLogsDir: logs\nresolvConf: resolv.conf\n`);
    expect(loadKubeletConfig(file).options).toEqual({
      podManifestPath: path.join(dir, 'pods'),
      podLogsDirectory: path.join(dir, 'logs'),
      resolvConf: path.join(dir, 'resolv.conf'),
    });
    // An empty resolvConf (*string) is "none", kept as is.
    fs.writeFileSync(file, `${header}resolvConf: ""\n`);
    expect(loadKubeletConfig(file).options).toEqual({ resolvConf: '' });
  });

  // The flags of `kubelet-kit run` that these options come from, as commander sees them.
  function flagsOf(argv: string[]) {
    const command = new Command()
      .exitOverride()
      .option('--max-pods <n>', '', Number, 110)
      .option('--port <n>', '', Number, 10250)
      .option('--address <ip>', '', '127.0.0.1')
      .option('--container-runtime-endpoint <e>', '', 'unix:///run/containerd/containerd.sock')
      .option('--pod-manifest-path <p>')
      .option('--cluster-dns <ips...>')
      .option('--resolv-conf <p>', '', '/etc/resolv.conf')
      .option('--event-burst <n>', '', Number)
      .option('--feature-gates <gates>', '', parseFeatureGates);
    command.parse(argv, { from: 'user' });
    const f = command.opts();
    const fromFlags: AgentOptions = {
      runtimeEndpoint: f.containerRuntimeEndpoint,
      maxPods: f.maxPods,
      port: f.port,
      address: f.address,
      resolvConf: f.resolvConf,
      clusterDNS: f.clusterDns ?? [],
      ...(f.podManifestPath ? { podManifestPath: f.podManifestPath } : {}),
      ...(f.eventBurst !== undefined ? { eventBurst: f.eventBurst } : {}),
      ...(f.featureGates !== undefined ? { featureGates: f.featureGates } : {}),
    };
    return { fromFlags, explicit: (flag: string) => command.getOptionValueSource(flag) === 'cli' };
  }

  it('lets flags given on the command line win over the file, and the file over defaults', () => {
    const config = parse(`
maxPods: 20
port: 10300
address: 192.0.2.1
staticPodPath: /etc/manifests
clusterDNS: [10.96.0.10]
resolvConf: ""
registerNode: false
`);
    const { fromFlags, explicit } = flagsOf(['--max-pods', '40', '--cluster-dns', '10.0.0.53']);
    const { options, unapplied } = applyKubeletConfig(fromFlags, config, explicit);
    expect(options).toEqual({
      runtimeEndpoint: 'unix:///run/containerd/containerd.sock', // neither: the flag's default
      maxPods: 40, // flag
      port: 10300, // file over the flag's default
      address: '192.0.2.1',
      podManifestPath: '/etc/manifests',
      clusterDNS: ['10.0.0.53'], // flag
      resolvConf: '',
      registerNode: false,
    });
    expect(unapplied).toEqual([]);
  });

  it('applies the event and lease fields, a flag given winning over the file', () => {
    const config = parse('eventRecordQPS: 7\neventBurst: 9\nnodeLeaseDurationSeconds: 30\n');
    const { fromFlags, explicit } = flagsOf(['--pod-manifest-path', '/m', '--event-burst', '11']);
    const { options, unapplied } = applyKubeletConfig(fromFlags, config, explicit);
    expect(options).toMatchObject({ eventQPS: 7, eventBurst: 11, nodeLeaseDurationSeconds: 30 });
    expect(unapplied).toEqual([]);
  });

  it('applies the image fields (GC thresholds and ages, pulls), explicit zeros of pointer fields kept', () => {
    const config = parse(`
imageGCHighThresholdPercent: 60
imageGCLowThresholdPercent: 0
imageMinimumGCAge: 5m
imageMaximumGCAge: 1h
serializeImagePulls: false
maxParallelImagePulls: 5
registryPullQPS: 0
registryBurst: 3
`);
    const { fromFlags, explicit } = flagsOf(['--pod-manifest-path', '/m']);
    expect(applyKubeletConfig(fromFlags, config, explicit).options).toMatchObject({
      imageGCHighThresholdPercent: 60,
      imageGCLowThresholdPercent: 0,
      imageMinimumGCAgeMs: 300_000,
      imageMaximumGCAgeMs: 3_600_000,
      serializeImagePulls: false,
      maxParallelImagePulls: 5,
      registryPullQPS: 0,
      registryBurst: 3,
    });
  });

  it("merges the file's feature gates under the flag's, gate by gate (upstream flag precedence)", () => {
    const config = parse('featureGates: { EventedPLEG: true, KubeletCrashLoopBackOffMax: false }\n');
    const fileOnly = flagsOf(['--pod-manifest-path', '/m']);
    expect(applyKubeletConfig(fileOnly.fromFlags, config, fileOnly.explicit).options.featureGates).toEqual({
      EventedPLEG: true,
      KubeletCrashLoopBackOffMax: false,
    });
    const both = flagsOf(['--pod-manifest-path', '/m', '--feature-gates', 'EventedPLEG=false']);
    expect(applyKubeletConfig(both.fromFlags, config, both.explicit).options.featureGates).toEqual({
      EventedPLEG: false,
      KubeletCrashLoopBackOffMax: false,
    });
  });

  it('refuses a feature gate whose value is not a bool, naming it', () => {
    const err = errorOf('featureGates: { EventedPLEG: "yes" }\n');
    expect(err.field).toBe('featureGates');
    expect(err.message).toContain('gate "EventedPLEG" must be true or false');
  });

  it('leaves the flags alone for what the file does not set', () => {
    const { fromFlags, explicit } = flagsOf(['--pod-manifest-path', '/m']);
    expect(applyKubeletConfig(fromFlags, parse(''), explicit).options).toEqual(fromFlags);
  });
});

describe('container log rotation fields', () => {
  it('map to the agent options, the size in bytes', () => {
    const c = parse(
      'containerLogMaxSize: 5Mi\ncontainerLogMaxFiles: 3\ncontainerLogMaxWorkers: 2\ncontainerLogMonitorInterval: 4s\n',
    );
    expect(c.options).toMatchObject({
      containerLogMaxSizeBytes: 5 * 1024 * 1024,
      containerLogMaxFiles: 3,
      containerLogMaxWorkers: 2,
      containerLogMonitorIntervalMs: 4000,
    });
  });

  it("refuses values upstream's validation refuses, naming the field", () => {
    expect(errorOf('containerLogMaxSize: lots\n').field).toBe('containerLogMaxSize');
    expect(errorOf('containerLogMaxFiles: 1\n').field).toBe('containerLogMaxFiles');
    expect(errorOf('containerLogMaxWorkers: 0\n').field).toBe('containerLogMaxWorkers');
    expect(errorOf('containerLogMonitorInterval: 1s\n').field).toBe('containerLogMonitorInterval');
  });
});
