import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { quantityValue } from '@kubelet-kit/core';
import type { AgentOptions } from './agent.js';
import { parseGoDuration } from './go-duration.js';
import { yaml } from './load-yaml.js';
import type { NodeTaint } from './node-info.js';

// `kubelet-kit run --config`: a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, upstream
// staging/src/k8s.io/kubelet/config/v1beta1 and its defaults in pkg/kubelet/apis/config/v1beta1).
// Fields with an agent equivalent set it; fields the agent does not implement are accepted only
// at upstream's default, so the agent never runs weaker than the file asks.

/**
 * The API group and version of the file, as upstream's `kubeletconfigv1beta1`.
 *
 * @public
 */
export const KubeletConfigApiVersion = 'kubelet.config.k8s.io/v1beta1';

/**
 * A KubeletConfiguration file the agent cannot honour: unreadable, not YAML, of another kind, a
 * field unknown or of the wrong type, or a field set that the agent does not implement.
 *
 * @public
 */
export class KubeletConfigError extends Error {
  /** What a caller switches on. */
  readonly code = 'InvalidKubeletConfig';
  constructor(
    /** The file, as given to `--config`. */
    readonly file: string,
    /** The field's path in the file, e.g. `authentication.webhook.enabled`; '' for the whole file. */
    readonly field: string,
    /** What is wrong with it. */
    readonly problem: string,
  ) {
    super(field ? `${file}: ${field}: ${problem}` : `${file}: ${problem}`);
    this.name = 'KubeletConfigError';
  }
}

/**
 * What the file sets of {@link AgentOptions} (paths resolved against the file's directory, as
 * upstream resolves `KubeletConfigurationPathRefs`).
 *
 * @public
 */
export type KubeletConfigAgentOptions = {
  -readonly [K in
    | 'podManifestPath'
    | 'manifestUrl'
    | 'syncFrequencyMs'
    | 'fileCheckFrequencyMs'
    | 'address'
    | 'port'
    | 'runtimeEndpoint'
    | 'maxPods'
    | 'clusterDNS'
    | 'clusterDomain'
    | 'resolvConf'
    | 'allowedUnsafeSysctls'
    | 'podLogsDirectory'
    | 'registerWithTaints'
    // Images.
    | 'imageGCHighThresholdPercent'
    | 'imageGCLowThresholdPercent'
    | 'imageMinimumGCAgeMs'
    | 'imageMaximumGCAgeMs'
    | 'serializeImagePulls'
    | 'maxParallelImagePulls'
    | 'registryPullQPS'
    | 'registryBurst'
    // Pod cgroups.
    | 'cgroupsPerQOS'
    | 'cgroupDriver'
    | 'cgroupRoot'
    | 'podPidsLimit'
    | 'enforceNodeAllocatable'
    // Eviction.
    | 'evictionHard'
    | 'evictionSoft'
    | 'evictionSoftGracePeriod'
    | 'evictionMinimumReclaim'
    | 'evictionPressureTransitionPeriodMs'
    | 'evictionMaxPodGracePeriod'
    // Container log rotation.
    | 'containerLogMaxSizeBytes'
    | 'containerLogMaxFiles'
    | 'containerLogMaxWorkers'
    | 'containerLogMonitorIntervalMs'
    // Feature gates (merged under the --feature-gates flag's, gate by gate).
    | 'featureGates']?: AgentOptions[K];
};

/**
 * The cluster-node fields of the file (issue #25), kept apart from the others: parsed, defaulted
 * and validated here; {@link connectedPendingOptions} says which of them reach the agent.
 *
 * @public
 */
export interface PendingKubeletConfigOptions {
  /** `registerNode` (default true). */
  registerNode?: boolean;
  /** `nodeStatusUpdateFrequency` (default 10 s). */
  nodeStatusUpdateFrequencyMs?: number;
  /** `nodeStatusReportFrequency` (default 5 min, or `nodeStatusUpdateFrequency` when that is set). */
  nodeStatusReportFrequencyMs?: number;
  /** `systemReserved`: resource name → quantity. */
  systemReserved?: Record<string, string>;
  /** `kubeReserved`: resource name → quantity. */
  kubeReserved?: Record<string, string>;
  /** `eventRecordQPS` (default 50; 0 takes client-go's 5, as upstream's event client). */
  eventQPS?: number;
  /** `eventBurst` (default 100). */
  eventBurst?: number;
  /** `nodeLeaseDurationSeconds` (default 40). */
  nodeLeaseDurationSeconds?: number;
}

/**
 * The cluster-node keys passed to the agent (all of them now). A new one is connected by adding
 * its name here once its AgentOptions key exists; the type checks that the key exists.
 *
 * @public
 */
export const connectedPendingOptions: readonly (keyof PendingKubeletConfigOptions & keyof AgentOptions)[] = [
  'registerNode',
  'nodeStatusUpdateFrequencyMs',
  'nodeStatusReportFrequencyMs',
  'systemReserved',
  'kubeReserved',
  'eventQPS',
  'eventBurst',
  'nodeLeaseDurationSeconds',
];

/**
 * The kubelet API's TLS and auth fields of the file, named by the `kubelet-kit run` flag
 * (commander's attribute name) they stand for: a flag given on the command line wins. Only
 * fields present in the file are set (upstream's v1beta1 defaults of Webhook authentication and
 * authorization are not taken: a standalone agent has no API server to ask).
 *
 * @public
 */
export interface KubeletConfigServerFlags {
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsMinVersion?: string;
  tlsCipherSuites?: string[];
  clientCaFile?: string;
  anonymousAuth?: boolean;
  authenticationTokenWebhook?: boolean;
  authenticationTokenWebhookCacheTtl?: number;
  authorizationMode?: string;
  authorizationWebhookCacheAuthorizedTtl?: number;
  authorizationWebhookCacheUnauthorizedTtl?: number;
  readOnlyPort?: number;
}

/**
 * A KubeletConfiguration file, read.
 *
 * @public
 */
export interface KubeletConfig {
  /** The file, as given. */
  readonly file: string;
  /** The AgentOptions the file sets (only fields present in the file). */
  readonly options: KubeletConfigAgentOptions;
  /** The cluster-node fields (defaults included); see {@link connectedPendingOptions}. */
  readonly pending: PendingKubeletConfigOptions;
  /** The `--log-level` the file's `logging.verbosity` asks for, when set. */
  readonly logLevel?: 'info' | 'debug';
  /** The kubelet API's TLS and auth fields present in the file. */
  readonly server?: KubeletConfigServerFlags;
}

/**
 * The `kubelet-kit run` flag (commander's attribute name) behind each option a file can set: a
 * flag given on the command line wins over the file (upstream's `kubeletConfigFlagPrecedence`).
 *
 * @public
 */
export const optionFlags: Readonly<
  Record<keyof KubeletConfigAgentOptions | keyof PendingKubeletConfigOptions, string>
> = {
  podManifestPath: 'podManifestPath',
  manifestUrl: 'manifestUrl',
  syncFrequencyMs: 'syncFrequency',
  fileCheckFrequencyMs: 'fileCheckFrequency',
  address: 'address',
  port: 'port',
  runtimeEndpoint: 'containerRuntimeEndpoint',
  maxPods: 'maxPods',
  clusterDNS: 'clusterDns',
  clusterDomain: 'clusterDomain',
  resolvConf: 'resolvConf',
  allowedUnsafeSysctls: 'allowedUnsafeSysctls',
  podLogsDirectory: 'podLogsDir',
  registerWithTaints: 'registerWithTaints',
  // Images.
  imageGCHighThresholdPercent: 'imageGcHighThreshold',
  imageGCLowThresholdPercent: 'imageGcLowThreshold',
  imageMinimumGCAgeMs: 'imageMinimumGcAge',
  imageMaximumGCAgeMs: 'imageMaximumGcAge',
  serializeImagePulls: 'serializeImagePulls',
  maxParallelImagePulls: 'maxParallelImagePulls',
  registryPullQPS: 'registryQps',
  registryBurst: 'registryBurst',
  containerLogMaxSizeBytes: 'containerLogMaxSize',
  containerLogMaxFiles: 'containerLogMaxFiles',
  containerLogMaxWorkers: 'containerLogMaxWorkers',
  containerLogMonitorIntervalMs: 'containerLogMonitorInterval',
  registerNode: 'registerNode',
  nodeStatusUpdateFrequencyMs: 'nodeStatusUpdateFrequency',
  nodeStatusReportFrequencyMs: 'nodeStatusReportFrequency',
  systemReserved: 'systemReserved',
  kubeReserved: 'kubeReserved',
  eventQPS: 'eventQps',
  eventBurst: 'eventBurst',
  nodeLeaseDurationSeconds: 'nodeLeaseDurationSeconds',
  cgroupsPerQOS: 'cgroupsPerQos',
  cgroupDriver: 'cgroupDriver',
  cgroupRoot: 'cgroupRoot',
  podPidsLimit: 'podMaxPids',
  enforceNodeAllocatable: 'enforceNodeAllocatable',
  featureGates: 'featureGates',
  evictionHard: 'evictionHard',
  evictionSoft: 'evictionSoft',
  evictionSoftGracePeriod: 'evictionSoftGracePeriod',
  evictionMinimumReclaim: 'evictionMinimumReclaim',
  evictionPressureTransitionPeriodMs: 'evictionPressureTransitionPeriod',
  evictionMaxPodGracePeriod: 'evictionMaxPodGracePeriod',
};

// ---- the field table ----

type Kind = 'duration' | 'int' | 'bool' | 'float' | 'string' | 'strings' | 'stringMap' | 'object' | 'list';

interface Field {
  readonly kind: Kind;
  /**
   * Go pointer fields (`*bool`, `*int32`, `*Duration`): an explicit zero stays zero. Value
   * fields: zero means "unset" and takes the default, as upstream's defaulting does.
   */
  readonly pointer?: boolean;
  /** Upstream's default (after SetDefaults_KubeletConfiguration); undefined for "none". */
  readonly def?: unknown;
  readonly min?: number;
  readonly max?: number;
  /** Values accepted besides the default for a field the agent does not implement (what it does). */
  readonly alsoAccepted?: readonly unknown[];
  /** Where the value goes; none: not implemented, only the default is accepted. */
  readonly to?: keyof KubeletConfigAgentOptions | keyof PendingKubeletConfigOptions;
  /** A check of the value beyond its type; returns the problem. */
  readonly check?: (value: never) => string | undefined;
}

const int32 = { min: -(2 ** 31), max: 2 ** 31 - 1 };
const checkCgroupDriver = (v: string) =>
  v === 'cgroupfs' || v === 'systemd' ? undefined : `${JSON.stringify(v)} is not one of cgroupfs, systemd`;
// Only the pods cgroup is enforced: system-reserved and kube-reserved cgroups are not made.
const checkEnforceNodeAllocatable = (v: readonly string[]) => {
  const bad = v.filter((e) => e !== 'pods' && e !== 'none');
  return bad.length ? `kubelet-kit enforces only "pods" (or "none"), got ${JSON.stringify(bad)}` : undefined;
};
// A gate's value is a bool, as in upstream's map[string]bool.
const checkFeatureGates = (v: Record<string, unknown>) => {
  const bad = Object.entries(v).find(([, on]) => typeof on !== 'boolean');
  return bad
    ? `gate ${JSON.stringify(bad[0])} must be true or false, got ${JSON.stringify(bad[1])}`
    : undefined;
};
const isIP = (v: string) => (net.isIP(v) === 0 ? `${JSON.stringify(v)} is not an IP address` : undefined);
const reservableResources = new Set(['cpu', 'memory', 'ephemeral-storage', 'pid']);
const quantityPattern = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$/;
function checkReserved(map: Record<string, string>): string | undefined {
  for (const [name, quantity] of Object.entries(map)) {
    if (!reservableResources.has(name))
      return `resource ${JSON.stringify(name)} cannot be reserved (only cpu, memory, ephemeral-storage, pid)`;
    if (!quantityPattern.test(quantity)) return `${name}: ${JSON.stringify(quantity)} is not a quantity`;
  }
  return undefined;
}

/** A `containerLogMaxSize` quantity in bytes; undefined when it is not a positive quantity. */
function logMaxSizeBytes(v: string): number | undefined {
  try {
    const n = quantityValue(v);
    return n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Upstream v1.34's evictionHard default. */
const defaultEvictionHard = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

const s = 1000;
const min = 60 * s;

/** Every top-level field of KubeletConfiguration v1beta1 (v1.34) but the nested ones below. */
const fields: Readonly<Record<string, Field>> = {
  // Implemented: these set AgentOptions.
  staticPodPath: { kind: 'string', def: '', to: 'podManifestPath' },
  staticPodURL: { kind: 'string', def: '', to: 'manifestUrl' },
  syncFrequency: { kind: 'duration', def: 1 * min, to: 'syncFrequencyMs' },
  fileCheckFrequency: { kind: 'duration', def: 20 * s, to: 'fileCheckFrequencyMs' },
  address: { kind: 'string', def: '0.0.0.0', to: 'address', check: isIP },
  port: { kind: 'int', def: 10250, min: 1, max: 65535, to: 'port' },
  containerRuntimeEndpoint: {
    kind: 'string',
    def: 'unix:///run/containerd/containerd.sock',
    to: 'runtimeEndpoint',
  },
  maxPods: { kind: 'int', def: 110, min: 0, max: int32.max, to: 'maxPods' },
  clusterDNS: {
    kind: 'strings',
    def: [],
    to: 'clusterDNS',
    check: (v: string[]) => v.map(isIP).find((p) => p !== undefined),
  },
  clusterDomain: { kind: 'string', def: '', to: 'clusterDomain' },
  resolvConf: { kind: 'string', pointer: true, def: '/etc/resolv.conf', to: 'resolvConf' },
  allowedUnsafeSysctls: { kind: 'strings', def: [], to: 'allowedUnsafeSysctls' },
  podLogsDir: { kind: 'string', def: '/var/log/pods', to: 'podLogsDirectory' },
  // registerWithTaints is read by readTaints.
  // The cluster-node fields (kept in `pending`).
  registerNode: { kind: 'bool', pointer: true, def: true, to: 'registerNode' },
  nodeStatusUpdateFrequency: { kind: 'duration', def: 10 * s, min: 1, to: 'nodeStatusUpdateFrequencyMs' },
  nodeStatusReportFrequency: { kind: 'duration', def: 5 * min, min: 1, to: 'nodeStatusReportFrequencyMs' },
  systemReserved: { kind: 'stringMap', def: {}, to: 'systemReserved', check: checkReserved },
  kubeReserved: { kind: 'stringMap', def: {}, to: 'kubeReserved', check: checkReserved },
  eventRecordQPS: { kind: 'int', pointer: true, def: 50, min: 0, max: int32.max, to: 'eventQPS' },
  eventBurst: { kind: 'int', def: 100, min: 0, max: int32.max, to: 'eventBurst' },
  nodeLeaseDurationSeconds: { kind: 'int', def: 40, min: 1, max: int32.max, to: 'nodeLeaseDurationSeconds' },
  // Not implemented: accepted at upstream's default only.
  enableServer: { kind: 'bool', pointer: true, def: true },
  httpCheckFrequency: { kind: 'duration', def: 20 * s },
  staticPodURLHeader: { kind: 'object', def: {} },
  volumePluginDir: { kind: 'string', def: '/usr/libexec/kubernetes/kubelet-plugins/volume/exec/' },
  providerID: { kind: 'string', def: '' },
  rotateCertificates: { kind: 'bool', def: false },
  serverTLSBootstrap: { kind: 'bool', def: false },
  registryPullQPS: { kind: 'int', pointer: true, def: 5, to: 'registryPullQPS' },
  registryBurst: { kind: 'int', def: 10, to: 'registryBurst' },
  imagePullCredentialsVerificationPolicy: { kind: 'string', def: '' },
  preloadedImagesVerificationAllowlist: { kind: 'strings', def: [] },
  enableDebuggingHandlers: { kind: 'bool', pointer: true, def: true },
  enableContentionProfiling: { kind: 'bool', def: false },
  healthzPort: { kind: 'int', pointer: true, def: 10248 },
  healthzBindAddress: { kind: 'string', def: '127.0.0.1' },
  oomScoreAdj: { kind: 'int', pointer: true, def: -999 },
  streamingConnectionIdleTimeout: { kind: 'duration', def: 4 * 60 * min },
  imageMinimumGCAge: { kind: 'duration', def: 2 * min, to: 'imageMinimumGCAgeMs' },
  imageMaximumGCAge: { kind: 'duration', def: 0, to: 'imageMaximumGCAgeMs' },
  imageGCHighThresholdPercent: { kind: 'int', pointer: true, def: 85, to: 'imageGCHighThresholdPercent' },
  imageGCLowThresholdPercent: { kind: 'int', pointer: true, def: 80, to: 'imageGCLowThresholdPercent' },
  volumeStatsAggPeriod: { kind: 'duration', def: 1 * min },
  kubeletCgroups: { kind: 'string', def: '' },
  systemCgroups: { kind: 'string', def: '' },
  cgroupRoot: { kind: 'string', def: '', to: 'cgroupRoot' },
  cgroupsPerQOS: { kind: 'bool', pointer: true, def: true, to: 'cgroupsPerQOS' },
  cgroupDriver: { kind: 'string', def: 'cgroupfs', to: 'cgroupDriver', check: checkCgroupDriver },
  cpuManagerPolicy: { kind: 'string', def: 'none' },
  singleProcessOOMKill: { kind: 'bool', pointer: true },
  cpuManagerPolicyOptions: { kind: 'object', def: {} },
  cpuManagerReconcilePeriod: { kind: 'duration', def: 10 * s },
  memoryManagerPolicy: { kind: 'string', def: 'None' },
  topologyManagerPolicy: { kind: 'string', def: 'none' },
  topologyManagerScope: { kind: 'string', def: 'container' },
  topologyManagerPolicyOptions: { kind: 'object', def: {} },
  qosReserved: { kind: 'object', def: {} },
  // The CRI clients' deadline is upstream's default, 2 min.
  runtimeRequestTimeout: { kind: 'duration', def: 2 * min },
  hairpinMode: { kind: 'string', def: 'promiscuous-bridge' },
  podCIDR: { kind: 'string', def: '' },
  podPidsLimit: { kind: 'int', pointer: true, def: -1, min: -1, to: 'podPidsLimit' },
  runOnce: { kind: 'bool', def: false },
  cpuCFSQuota: { kind: 'bool', pointer: true, def: true },
  cpuCFSQuotaPeriod: { kind: 'duration', pointer: true, def: 100 },
  nodeStatusMaxImages: { kind: 'int', pointer: true, def: 50 },
  maxOpenFiles: { kind: 'int', def: 1_000_000 },
  // The agent speaks JSON to the API server.
  contentType: {
    kind: 'string',
    def: 'application/vnd.kubernetes.protobuf',
    alsoAccepted: ['application/json'],
  },
  kubeAPIQPS: { kind: 'int', pointer: true, def: 50 },
  kubeAPIBurst: { kind: 'int', def: 100 },
  // Image pulls (validated together with the GC fields when the agent is made).
  serializeImagePulls: { kind: 'bool', pointer: true, def: true, to: 'serializeImagePulls' },
  maxParallelImagePulls: { kind: 'int', pointer: true, to: 'maxParallelImagePulls' },
  // Eviction (thresholds validated when the agent is made).
  evictionHard: { kind: 'stringMap', def: defaultEvictionHard, to: 'evictionHard' },
  evictionSoft: { kind: 'stringMap', def: {}, to: 'evictionSoft' },
  evictionSoftGracePeriod: { kind: 'stringMap', def: {}, to: 'evictionSoftGracePeriod' },
  evictionPressureTransitionPeriod: {
    kind: 'duration',
    def: 5 * min,
    to: 'evictionPressureTransitionPeriodMs',
  },
  evictionMaxPodGracePeriod: { kind: 'int', def: 0, to: 'evictionMaxPodGracePeriod' },
  evictionMinimumReclaim: { kind: 'stringMap', def: {}, to: 'evictionMinimumReclaim' },
  mergeDefaultEvictionSettings: { kind: 'bool', pointer: true, def: false },
  podsPerCore: { kind: 'int', def: 0 },
  enableControllerAttachDetach: { kind: 'bool', pointer: true, def: true },
  protectKernelDefaults: { kind: 'bool', def: false },
  makeIPTablesUtilChains: { kind: 'bool', pointer: true, def: true },
  iptablesMasqueradeBit: { kind: 'int', pointer: true, def: 14 },
  iptablesDropBit: { kind: 'int', pointer: true, def: 15 },
  featureGates: { kind: 'object', def: {}, to: 'featureGates', check: checkFeatureGates },
  failSwapOn: { kind: 'bool', pointer: true, def: true },
  // No swap for containers: upstream's NoSwap.
  memorySwap: { kind: 'object', def: {}, alsoAccepted: [{ swapBehavior: '' }, { swapBehavior: 'NoSwap' }] },
  // Container log rotation (upstream's ContainerLogManager; validation as upstream's).
  containerLogMaxSize: {
    kind: 'string',
    def: '10Mi',
    to: 'containerLogMaxSizeBytes',
    check: (v: string) =>
      logMaxSizeBytes(v) === undefined ? `${JSON.stringify(v)} is not a positive quantity` : undefined,
  },
  containerLogMaxFiles: {
    kind: 'int',
    pointer: true,
    def: 5,
    min: 2,
    max: int32.max,
    to: 'containerLogMaxFiles',
  },
  containerLogMaxWorkers: {
    kind: 'int',
    pointer: true,
    def: 1,
    min: 1,
    max: int32.max,
    to: 'containerLogMaxWorkers',
  },
  containerLogMonitorInterval: {
    kind: 'duration',
    pointer: true,
    def: 10 * s,
    min: 3 * s,
    to: 'containerLogMonitorIntervalMs',
  },
  // ConfigMaps and Secrets are read through a TTL cache (upstream's Cache strategy).
  configMapAndSecretChangeDetectionStrategy: { kind: 'string', def: 'Watch', alsoAccepted: ['Cache'] },
  reservedSystemCPUs: { kind: 'string', def: '' },
  showHiddenMetricsForVersion: { kind: 'string', def: '' },
  systemReservedCgroup: { kind: 'string', def: '' },
  kubeReservedCgroup: { kind: 'string', def: '' },
  // Defaulted when nil only: an explicit [] enforces nothing.
  enforceNodeAllocatable: {
    kind: 'strings',
    pointer: true,
    def: ['pods'],
    to: 'enforceNodeAllocatable',
    check: checkEnforceNodeAllocatable,
  },
  kernelMemcgNotification: { kind: 'bool', def: false },
  enableSystemLogHandler: { kind: 'bool', pointer: true, def: true },
  enableSystemLogQuery: { kind: 'bool', pointer: true, def: false },
  shutdownGracePeriod: { kind: 'duration', def: 0 },
  shutdownGracePeriodCriticalPods: { kind: 'duration', def: 0 },
  shutdownGracePeriodByPodPriority: { kind: 'list', def: [] },
  crashLoopBackOff: { kind: 'object', def: {} },
  reservedMemory: { kind: 'list', def: [] },
  enableProfilingHandler: { kind: 'bool', pointer: true, def: true },
  enableDebugFlagsHandler: { kind: 'bool', pointer: true, def: true },
  seccompDefault: { kind: 'bool', pointer: true, def: false },
  memoryThrottlingFactor: { kind: 'float', pointer: true, def: 0.9 },
  tracing: { kind: 'object' },
  localStorageCapacityIsolation: { kind: 'bool', pointer: true, def: true },
  failCgroupV1: { kind: 'bool', pointer: true, def: false },
  userNamespaces: { kind: 'object' },
};

// Read by their own functions below.
const nestedFields = new Set([
  'apiVersion',
  'kind',
  'authentication',
  'authorization',
  // The kubelet API's TLS (read by serverFields).
  'readOnlyPort',
  'tlsCertFile',
  'tlsPrivateKeyFile',
  'tlsCipherSuites',
  'tlsMinVersion',
  'logging',
  'registerWithTaints',
  'imageServiceEndpoint',
]);

// ---- reading ----

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isZero(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  if (isRecord(value)) return Object.keys(value).length === 0;
  return value === 0 || value === '' || value === false;
}

function shown(value: unknown, kind: Kind): string {
  if (kind === 'duration' && typeof value === 'number') return `${value} ms`;
  return JSON.stringify(value);
}

class Reader {
  readonly options: KubeletConfigAgentOptions = {};
  readonly pending: PendingKubeletConfigOptions = {};
  readonly server: KubeletConfigServerFlags = {};
  logLevel: 'info' | 'debug' | undefined;

  constructor(
    readonly file: string,
    readonly directory: string,
  ) {}

  fail(field: string, problem: string): never {
    throw new KubeletConfigError(this.file, field, problem);
  }

  /** The value decoded as `kind`, or a type error naming the field (as Go's strict decoding). */
  decode(field: string, kind: Kind, raw: unknown): unknown {
    const want = (what: string): never => this.fail(field, `must be ${what}, got ${typeName(raw)}`);
    switch (kind) {
      case 'duration': {
        if (typeof raw !== 'string') return want('a duration such as "10s" or "1m30s"');
        const ms = parseGoDuration(raw);
        if (ms === undefined)
          return this.fail(field, `invalid duration ${JSON.stringify(raw)} (use e.g. "10s", "1m30s")`);
        return ms;
      }
      case 'int':
        if (typeof raw !== 'number' || !Number.isInteger(raw)) return want('a whole number');
        return raw;
      case 'float':
        if (typeof raw !== 'number') return want('a number');
        return raw;
      case 'bool':
        if (typeof raw !== 'boolean') return want('true or false');
        return raw;
      case 'string':
        if (typeof raw !== 'string') return want('a string');
        return raw;
      case 'strings':
        if (!Array.isArray(raw)) return want('a list of strings');
        raw.forEach((v, i) => {
          if (typeof v !== 'string') this.fail(`${field}[${i}]`, `must be a string, got ${typeName(v)}`);
        });
        return raw;
      case 'stringMap':
        if (!isRecord(raw)) return want('a map of strings');
        for (const [k, v] of Object.entries(raw)) {
          if (typeof v !== 'string') this.fail(`${field}.${k}`, `must be a string, got ${typeName(v)}`);
        }
        return raw;
      case 'object':
        if (!isRecord(raw)) return want('an object');
        return raw;
      case 'list':
        if (!Array.isArray(raw)) return want('a list');
        return raw;
    }
  }

  field(name: string, spec: Field, raw: unknown): void {
    // A null is an unset field, as in Go's JSON decoding.
    if (raw === null) return;
    let value = this.decode(name, spec.kind, raw);
    if (spec.kind === 'duration' && (value as number) < 0) this.fail(name, 'must not be negative');
    if (!spec.pointer && isZero(value)) {
      // Unset: an option the agent has keeps the agent's default (e.g. address 127.0.0.1).
      if (spec.to) return;
      if (spec.def !== undefined) value = spec.def;
    }
    if (spec.kind === 'int' || spec.kind === 'duration') {
      const n = value as number;
      const lo = spec.min ?? (spec.kind === 'int' ? int32.min : 0);
      const hi = spec.max ?? (spec.kind === 'int' ? int32.max : Number.MAX_SAFE_INTEGER);
      if (n < lo || n > hi) this.fail(name, `${shown(n, spec.kind)} is out of range [${lo}, ${hi}]`);
    }
    const problem = spec.check?.(value as never);
    if (problem) this.fail(name, problem);
    if (!spec.to) {
      const accepted = [spec.def ?? (spec.kind === 'object' ? {} : undefined), ...(spec.alsoAccepted ?? [])];
      if (!accepted.some((a) => isDeepStrictEqual(a, value) || (a === undefined && isZero(value)))) {
        this.fail(
          name,
          `kubelet-kit does not implement this field; it takes only upstream's default (${spec.def === undefined ? 'unset' : shown(spec.def, spec.kind)}), got ${shown(value, spec.kind)}`,
        );
      }
      return;
    }
    this.set(spec.to, value);
  }

  set(key: keyof KubeletConfigAgentOptions | keyof PendingKubeletConfigOptions, value: unknown): void {
    // The file has a quantity, the agent bytes.
    if (key === 'containerLogMaxSizeBytes') value = logMaxSizeBytes(value as string);
    if (key in optionFlagsOfPending) (this.pending as Record<string, unknown>)[key] = value;
    else (this.options as Record<string, unknown>)[key] = value;
  }

  /** A path in the file, relative to the file's directory (upstream's resolveRelativePaths). */
  resolve(key: 'podManifestPath' | 'podLogsDirectory' | 'resolvConf'): void {
    const p = this.options[key];
    if (p) this.options[key] = path.resolve(this.directory, p);
  }

  authentication(raw: unknown): void {
    const auth = this.object('authentication', raw, ['x509', 'webhook', 'anonymous']);
    const x509 = this.object('authentication.x509', auth.x509, ['clientCAFile']);
    const ca = this.typed('authentication.x509.clientCAFile', 'string', x509.clientCAFile) as
      | string
      | undefined;
    if (ca) this.server.clientCaFile = path.resolve(this.directory, ca);
    const webhook = this.object('authentication.webhook', auth.webhook, ['enabled', 'cacheTTL']);
    const enabled = this.typed('authentication.webhook.enabled', 'bool', webhook.enabled) as
      | boolean
      | undefined;
    if (enabled !== undefined) this.server.authenticationTokenWebhook = enabled;
    const ttl = this.typed('authentication.webhook.cacheTTL', 'duration', webhook.cacheTTL) as
      | number
      | undefined;
    if (ttl !== undefined) this.server.authenticationTokenWebhookCacheTtl = ttl;
    const anonymous = this.object('authentication.anonymous', auth.anonymous, ['enabled']);
    const anon = this.typed('authentication.anonymous.enabled', 'bool', anonymous.enabled) as
      | boolean
      | undefined;
    if (anon !== undefined) this.server.anonymousAuth = anon;
  }

  authorization(raw: unknown): void {
    const authz = this.object('authorization', raw, ['mode', 'webhook']);
    const mode = this.typed('authorization.mode', 'string', authz.mode) as string | undefined;
    if (mode !== undefined && mode !== '') {
      if (mode !== 'AlwaysAllow' && mode !== 'Webhook')
        this.fail('authorization.mode', `must be AlwaysAllow or Webhook, got ${JSON.stringify(mode)}`);
      this.server.authorizationMode = mode;
    }
    const webhook = this.object('authorization.webhook', authz.webhook, [
      'cacheAuthorizedTTL',
      'cacheUnauthorizedTTL',
    ]);
    const allowed = this.typed(
      'authorization.webhook.cacheAuthorizedTTL',
      'duration',
      webhook.cacheAuthorizedTTL,
    );
    if (allowed !== undefined) this.server.authorizationWebhookCacheAuthorizedTtl = allowed as number;
    const refused = this.typed(
      'authorization.webhook.cacheUnauthorizedTTL',
      'duration',
      webhook.cacheUnauthorizedTTL,
    );
    if (refused !== undefined) this.server.authorizationWebhookCacheUnauthorizedTtl = refused as number;
  }

  /** tlsCertFile, tlsPrivateKeyFile (paths against the file), tlsMinVersion, tlsCipherSuites, readOnlyPort. */
  serverFields(doc: Record<string, unknown>): void {
    for (const key of ['tlsCertFile', 'tlsPrivateKeyFile'] as const) {
      const v = this.typed(key, 'string', doc[key]) as string | undefined;
      if (v) this.server[key] = path.resolve(this.directory, v);
    }
    const min = this.typed('tlsMinVersion', 'string', doc.tlsMinVersion) as string | undefined;
    if (min) this.server.tlsMinVersion = min;
    const suites = this.typed('tlsCipherSuites', 'strings', doc.tlsCipherSuites) as string[] | undefined;
    if (suites?.length) this.server.tlsCipherSuites = suites;
    const port = this.typed('readOnlyPort', 'int', doc.readOnlyPort) as number | undefined;
    if (port !== undefined) {
      if (port < 0 || port > 65535) this.fail('readOnlyPort', `${port} is out of range [0, 65535]`);
      if (port > 0) this.server.readOnlyPort = port;
    }
  }

  logging(raw: unknown): void {
    const logging = this.object('logging', raw, [
      'format',
      'flushFrequency',
      'verbosity',
      'vmodule',
      'options',
    ]);
    // The agent writes JSON lines whatever the format; both are accepted.
    const format = this.typed('logging.format', 'string', logging.format);
    if (format !== undefined && !['', 'text', 'json'].includes(format as string))
      this.fail('logging.format', `unknown format ${JSON.stringify(format)} (text or json)`);
    // Go's logging config takes a duration string or nanoseconds; the agent flushes sooner.
    if (typeof logging.flushFrequency !== 'number')
      this.typed('logging.flushFrequency', 'duration', logging.flushFrequency);
    const verbosity = this.typed('logging.verbosity', 'int', logging.verbosity) as number | undefined;
    if (verbosity !== undefined) {
      if (verbosity < 0) this.fail('logging.verbosity', 'must not be negative');
      // klog's V(4) and up is debug output.
      this.logLevel = verbosity >= 4 ? 'debug' : 'info';
    }
    const vmodule = this.typed('logging.vmodule', 'list', logging.vmodule) as unknown[] | undefined;
    if (vmodule?.length) this.refuse('logging.vmodule', 'per-file verbosity');
    const options = this.object('logging.options', logging.options, ['json', 'text']);
    for (const format of ['json', 'text'] as const) {
      const o = this.object(`logging.options.${format}`, options[format], ['infoBufferSize', 'splitStream']);
      if (this.typed(`logging.options.${format}.splitStream`, 'bool', o.splitStream) === true)
        this.refuse(`logging.options.${format}.splitStream`, 'split output streams');
      const buffer = o.infoBufferSize;
      if (buffer !== undefined && buffer !== null && buffer !== '0' && buffer !== 0)
        this.refuse(`logging.options.${format}.infoBufferSize`, 'an info buffer size');
    }
  }

  registerWithTaints(raw: unknown): void {
    if (raw === null || raw === undefined) return;
    const list = this.decode('registerWithTaints', 'list', raw) as unknown[];
    const taints: NodeTaint[] = list.map((item, i) => {
      const at = `registerWithTaints[${i}]`;
      const t = this.object(at, item, ['key', 'value', 'effect', 'timeAdded']);
      const key = this.typed(`${at}.key`, 'string', t.key);
      if (!key) this.fail(`${at}.key`, 'is required');
      const value = this.typed(`${at}.value`, 'string', t.value) as string | undefined;
      const effect = this.typed(`${at}.effect`, 'string', t.effect);
      if (effect !== 'NoSchedule' && effect !== 'PreferNoSchedule' && effect !== 'NoExecute')
        this.fail(
          `${at}.effect`,
          `must be NoSchedule, PreferNoSchedule or NoExecute, got ${JSON.stringify(effect)}`,
        );
      if (t.timeAdded !== undefined && t.timeAdded !== null) this.refuse(`${at}.timeAdded`, 'a taint time');
      return { key: key as string, ...(value ? { value } : {}), effect };
    });
    this.options.registerWithTaints = taints;
  }

  object(field: string, raw: unknown, known: readonly string[]): Record<string, unknown> {
    if (raw === undefined || raw === null) return {};
    const o = this.decode(field, 'object', raw) as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!known.includes(k)) this.fail(`${field}.${k}`, 'unknown field');
    return o;
  }

  typed(field: string, kind: Kind, raw: unknown): unknown {
    return raw === undefined || raw === null ? undefined : this.decode(field, kind, raw);
  }

  refuse(field: string, what: string): never {
    return this.fail(
      field,
      `kubelet-kit does not implement ${what}; its endpoints and features would be weaker than asked`,
    );
  }
}

const optionFlagsOfPending: Readonly<Record<keyof PendingKubeletConfigOptions, true>> = {
  registerNode: true,
  nodeStatusUpdateFrequencyMs: true,
  nodeStatusReportFrequencyMs: true,
  systemReserved: true,
  kubeReserved: true,
  eventQPS: true,
  eventBurst: true,
  nodeLeaseDurationSeconds: true,
};

/**
 * Reads a KubeletConfiguration from `text` (YAML or JSON); `file` names it in errors and anchors
 * its relative paths.
 *
 * @public
 */
export function parseKubeletConfig(text: string, file: string): KubeletConfig {
  let doc: unknown;
  try {
    doc = yaml().parse(text);
  } catch (err) {
    throw new KubeletConfigError(file, '', `not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const reader = new Reader(file, path.dirname(path.resolve(file)));
  if (!isRecord(doc)) return reader.fail('', 'must be a KubeletConfiguration object');
  if (doc.apiVersion !== KubeletConfigApiVersion)
    reader.fail('apiVersion', `must be ${KubeletConfigApiVersion}, got ${JSON.stringify(doc.apiVersion)}`);
  if (doc.kind !== 'KubeletConfiguration')
    reader.fail('kind', `must be KubeletConfiguration, got ${JSON.stringify(doc.kind)}`);
  for (const name of Object.keys(doc)) {
    if (!(name in fields) && !nestedFields.has(name)) reader.fail(name, 'unknown field');
  }
  for (const [name, spec] of Object.entries(fields)) {
    if (name in doc) reader.field(name, spec, doc[name]);
  }
  if ('authentication' in doc) reader.authentication(doc.authentication);
  if ('authorization' in doc) reader.authorization(doc.authorization);
  reader.serverFields(doc);
  if ('logging' in doc) reader.logging(doc.logging);
  reader.registerWithTaints(doc.registerWithTaints);

  // imageServiceEndpoint is only accepted as the runtime's own endpoint (one CRI connection).
  const imageService = reader.typed('imageServiceEndpoint', 'string', doc.imageServiceEndpoint);
  if (imageService) {
    if (imageService !== (reader.options.runtimeEndpoint ?? fields.containerRuntimeEndpoint?.def))
      reader.refuse('imageServiceEndpoint', 'an image service apart from the runtime');
  }
  // Upstream defaults the report frequency to an explicitly set update frequency.
  if (
    reader.pending.nodeStatusReportFrequencyMs === undefined &&
    reader.pending.nodeStatusUpdateFrequencyMs !== undefined
  )
    reader.pending.nodeStatusReportFrequencyMs = reader.pending.nodeStatusUpdateFrequencyMs;
  reader.resolve('podManifestPath');
  reader.resolve('podLogsDirectory');
  reader.resolve('resolvConf');
  return {
    file,
    options: reader.options,
    pending: reader.pending,
    ...(reader.logLevel ? { logLevel: reader.logLevel } : {}),
    ...(Object.keys(reader.server).length ? { server: reader.server } : {}),
  };
}

/**
 * Reads the KubeletConfiguration file of `--config`.
 *
 * @public
 */
export function loadKubeletConfig(file: string): KubeletConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new KubeletConfigError(file, '', `cannot read: ${(err as Error).message}`);
  }
  return parseKubeletConfig(text, file);
}

/**
 * Lays a file's options under the command line's (upstream's precedence: flags given explicitly
 * win over the file, the file over defaults). `explicit` says whether the flag behind an option
 * (an {@link optionFlags} value) was given on the command line. Returns the options and the
 * PENDING values that do not reach the agent yet.
 *
 * @public
 */
export function applyKubeletConfig(
  fromFlags: AgentOptions,
  config: KubeletConfig,
  explicit: (flag: string) => boolean,
): { readonly options: AgentOptions; readonly unapplied: readonly (keyof PendingKubeletConfigOptions)[] } {
  const out: Record<string, unknown> = { ...fromFlags };
  for (const [key, value] of Object.entries(config.options)) {
    if (value !== undefined && !explicit(optionFlags[key as keyof KubeletConfigAgentOptions]))
      out[key] = value;
  }
  // Upstream's kubeletConfigFlagPrecedence keeps the file's gates the flag does not name.
  if (config.options.featureGates && explicit('featureGates'))
    out.featureGates = { ...config.options.featureGates, ...fromFlags.featureGates };
  const connected = new Set<string>(connectedPendingOptions);
  const unapplied: (keyof PendingKubeletConfigOptions)[] = [];
  for (const [key, value] of Object.entries(config.pending)) {
    if (value === undefined || explicit(optionFlags[key as keyof PendingKubeletConfigOptions])) continue;
    if (connected.has(key)) out[key] = value;
    else unapplied.push(key as keyof PendingKubeletConfigOptions);
  }
  return { options: out as unknown as AgentOptions, unapplied };
}
