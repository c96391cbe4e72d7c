import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ApiserverMirrorClient,
  ApiserverObjectGetter,
  ApiserverRuntimeClassList,
  ApiserverSource,
  ApiserverStatusSink,
  type MirrorPodApi,
  type PodStatusApi,
} from '@kubelet-kit/apiserver';
import {
  ApiserverSourceName,
  type Clock,
  type EventRecorder,
  InMemoryEventRecorder,
  type Logger,
  type MirrorClient,
  noopLogger,
  type ObjectGetter,
  type Pod,
  RealClock,
} from '@kubelet-kit/core';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { KubeGenericRuntimeManager } from '@kubelet-kit/kuberuntime';
import { GenericPLEG, PodStatusCache } from '@kubelet-kit/pleg';
import { FileSource, HttpSource, PodConfig, type PodSource } from '@kubelet-kit/pod-config';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import { DefaultProbeManager, DefaultResultsManager } from '@kubelet-kit/prober';
import { newStatusManager, type StatusSink } from '@kubelet-kit/status-manager';
import {
  BasicVolumeManager,
  LocalObjectGetter,
  SafeSubpather,
  SystemMounter,
} from '@kubelet-kit/volume-manager';
import type { KubeConfig } from '@kubernetes/client-node';
import type { NodeAllocatable } from './admission.js';
import type { PodConfigView, ProbeManagerView } from './deps.js';
import { instrumentCriClient } from './instrumented.js';
import { Kubelet } from './kubelet.js';
import { KubeletMetrics } from './metrics.js';
import { type NodeInfo, type NodeTaint, nodeLabels } from './node-info.js';
import { appArmorHostError, type PodFeatureSupport } from './pod-feature-admission.js';
import { LocalRuntimeClassList, loadRuntimeClasses } from './runtime-classes.js';
import { KubeletServer } from './server.js';
import { SysctlAllowlist } from './sysctl.js';

/**
 * Creation calls in flight at once. On a 2-core machine, where containerd is CPU-bound during a
 * burst, the agent had 110 pods Running 6-8 % sooner with 4 calls in flight than with 16 pods
 * created at a time and no bound on calls.
 */
const defaultMaxConcurrentCreationCalls = 4;
/** The runtime counts as down once Status has not answered ready for this long (upstream, 30 s). */
const maxWaitForContainerRuntimeMs = 30_000;

/** Options of {@link createAgent}: the `kubelet-kit run` flags, as an object. */
export interface AgentOptions {
  /** The node's name (upstream --hostname-override); default the host name, lowercased. */
  readonly nodeName?: string;
  /** Upstream --root-dir; default `/var/lib/kubelet-kit`. */
  readonly rootDirectory?: string;
  /** Upstream --container-runtime-endpoint. */
  readonly runtimeEndpoint: string;
  /**
   * Largest CRI message sent or received, bytes (default 16 MiB, upstream's limit). A runtime
   * listing tens of thousands of pods answers with more than that.
   */
  readonly maxCriMessageBytes?: number;
  /** Upstream --pod-manifest-path: a directory or a file of static pods. */
  readonly podManifestPath?: string;
  /** Upstream --manifest-url. */
  readonly manifestUrl?: string;
  /** Pod sources of the embedder's own (e.g. pod-config's `StaticPodSource`), beside the ones above. */
  readonly sources?: readonly PodSource[];
  /** Upstream --kubeconfig: pods bound to this node come from that API server, statuses go back to it. */
  readonly kubeconfig?: string;
  /** A directory of ConfigMap and Secret manifests for volumes and env, when there is no API server. */
  readonly objectDirectory?: string;
  /** Let static pods reference ConfigMaps, Secrets and the like (upstream forbids it). */
  readonly allowStaticPodApiReferences?: boolean;
  /** Upstream --max-pods; default 110. */
  readonly maxPods?: number;
  /** HTTP endpoints' address; default 127.0.0.1. */
  readonly address?: string;
  /** HTTP endpoints' port; default 10250, 0 for any free one. */
  readonly port?: number;
  /** Default `<rootDirectory>/logs/pods` (upstream /var/log/pods). */
  readonly podLogsDirectory?: string;
  /** Upstream --sync-frequency; default 60 s. */
  readonly syncFrequencyMs?: number;
  /** File source re-list period (upstream --file-check-frequency); default 20 s. */
  readonly fileCheckFrequencyMs?: number;
  /** Bound on pod syncs running at once (default none, as upstream: one goroutine per pod). */
  readonly maxConcurrentSyncs?: number;
  /** Bound on pods whose sandbox is being created at once (default 16). */
  readonly maxConcurrentPodCreations?: number;
  /**
   * Bound on RunPodSandbox, CreateContainer and StartContainer calls in flight at once (default
   * 4; see kuberuntime's `maxConcurrentCreationCalls`). Image pulls and reads are not bounded.
   */
  readonly maxConcurrentCreationCalls?: number;
  /** Crash-loop backoff, for tests (default 10 s → 300 s). */
  readonly crashLoopBackOff?: { readonly initialMs: number; readonly maxMs: number };
  /** The node's IPs; default the first non-internal IPv4 address of the host. */
  readonly nodeIPs?: readonly string[];
  /**
   * A file, or directory of files, of RuntimeClass objects (`node.k8s.io/v1`) pods may name in
   * `runtimeClassName`; default none (a pod naming one gets no sandbox). Read at creation. With a
   * kubeconfig the RuntimeClasses come from the API server (listed and watched, as upstream's
   * kubelet) and these files only supply names the API server lacks.
   */
  readonly runtimeClasses?: string;
  /** Upstream --allowed-unsafe-sysctls: sysctls or patterns ending in `*`, beside the safe ones. */
  readonly allowedUnsafeSysctls?: readonly string[];
  /** Upstream --node-labels, laid over the default hostname/os/arch labels. */
  readonly nodeLabels?: Readonly<Record<string, string>>;
  /** Upstream --register-with-taints. */
  readonly registerWithTaints?: readonly NodeTaint[];
  /**
   * Extended resources the node offers (e.g. `{ 'example.com/foo': 2 }`), as an admin would
   * patch them into the Node's capacity; default none.
   */
  readonly extendedResources?: Readonly<Record<string, number>>;
  /** Allocatable ephemeral storage, bytes; default the root directory's filesystem less 10 %. */
  readonly ephemeralStorageBytes?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /**
   * Called with each rejected manifest (pod-config's `PodValidationError`: file or URL, object
   * and field paths) and each source error, besides the log line and {@link Agent.sourceErrors}.
   */
  readonly onSourceError?: (error: Error) => void;
}

/** A running agent: the kubelet, its HTTP endpoints and what it was built from. */
export interface Agent {
  readonly kubelet: Kubelet;
  readonly metrics: KubeletMetrics;
  readonly recorder: EventRecorder;
  /** This node's name, labels and taints as admission sees them; node registration can reuse them. */
  readonly node: NodeInfo;
  /** What pods may request of the node (cpu, memory, pods, ephemeral storage, scalar resources). */
  readonly allocatable: NodeAllocatable;
  /** The bound address of the HTTP endpoints, once started. */
  readonly address: { readonly address: string; readonly port: number } | undefined;
  /** Rejections of manifests and other source errors, newest last (bounded). */
  readonly sourceErrors: readonly string[];
  start(): Promise<void>;
  /** Stops the agent; the containers keep running, and a new agent adopts them. */
  stop(): Promise<void>;
}

/** Events go to the log too, as the kubelet's do, besides the bounded in-memory list. */
function loggingRecorder(logger: Logger, inner: EventRecorder): EventRecorder {
  return {
    event(object, type, reason, message) {
      inner.event(object, type, reason, message);
      const fields = {
        event: reason,
        type,
        object: `${object.kind}/${object.namespace ? `${object.namespace}/` : ''}${object.name ?? ''}`,
        ...(object.fieldPath ? { fieldPath: object.fieldPath } : {}),
      };
      if (type === 'Warning') logger.warn(fields, message);
      else logger.info(fields, message);
    },
  };
}

function defaultNodeIPs(): string[] {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return [a.address];
  }
  return ['127.0.0.1'];
}

/** Builds a node agent from the kubelet-kit packages, as `kubelet-kit run` does. */
export function createAgent(options: AgentOptions): Agent {
  const clock = options.clock ?? new RealClock();
  const logger = options.logger ?? noopLogger;
  const recorder =
    options.recorder ??
    loggingRecorder(logger, new InMemoryEventRecorder({ limit: 1000, now: () => clock.now() }));
  const nodeName = (options.nodeName ?? os.hostname()).toLowerCase();
  const rootDirectory = path.resolve(options.rootDirectory ?? '/var/lib/kubelet-kit');
  const nodeIPs = options.nodeIPs ?? defaultNodeIPs();
  const metrics = new KubeletMetrics();
  const allocatable: NodeAllocatable = {
    cpu: os.cpus().length,
    memory: os.totalmem(),
    pods: options.maxPods ?? 110,
    ephemeralStorage: options.ephemeralStorageBytes ?? nodeEphemeralStorage(rootDirectory),
    scalarResources: { ...hugePages(), ...options.extendedResources },
  };
  const node: NodeInfo = {
    name: nodeName,
    labels: nodeLabels(nodeName, options.nodeLabels),
    taints: options.registerWithTaints ?? [],
  };
  const sysctls = SysctlAllowlist.forNode(options.allowedUnsafeSysctls);
  const sourceErrors: string[] = [];
  const onSourceError = (err: Error) => {
    sourceErrors.push(err.message);
    if (sourceErrors.length > 200) sourceErrors.shift();
    logger.warn({ err: err.message }, 'pod source error');
    options.onSourceError?.(err);
  };

  // The API client costs tens of MiB to load: only an agent with a kubeconfig loads it, when its
  // API-server source, status sink or object reads first need it (a bad kubeconfig fails start()).
  const kubeconfigPath = options.kubeconfig;
  let kubeConfigLoad: Promise<KubeConfig> | undefined;
  const kubeConfig = kubeconfigPath
    ? () =>
        (kubeConfigLoad ??= import('@kubernetes/client-node').then(({ KubeConfig }) => {
          const kc = new KubeConfig();
          kc.loadFromFile(kubeconfigPath);
          return kc;
        }))
    : undefined;

  let objectGetter: ObjectGetter | undefined;
  if (options.objectDirectory) {
    objectGetter = new LocalObjectGetter({
      directory: options.objectDirectory,
      clock,
      logger: logger.child({ component: 'objects' }),
    });
  } else if (kubeConfig) {
    let getter: Promise<ApiserverObjectGetter> | undefined;
    const apiGetter = () =>
      (getter ??= kubeConfig().then(
        (kc) =>
          new ApiserverObjectGetter({
            kubeConfig: kc,
            clock,
            logger: logger.child({ component: 'objects' }),
          }),
      ));
    objectGetter = {
      getConfigMap: async (namespace, name, signal) =>
        (await apiGetter()).getConfigMap(namespace, name, signal),
      getSecret: async (namespace, name, signal) => (await apiGetter()).getSecret(namespace, name, signal),
    };
  }

  // RuntimeClasses: from the API server with a kubeconfig (as upstream's kubelet), local files
  // (--runtime-classes) filling in names the API server lacks; from the files alone otherwise.
  const localRuntimeClasses = options.runtimeClasses
    ? loadRuntimeClasses(path.resolve(options.runtimeClasses))
    : new LocalRuntimeClassList();
  const apiRuntimeClasses = kubeConfig
    ? new ApiserverRuntimeClassList({
        kubeConfig,
        fallback: localRuntimeClasses,
        clock,
        logger,
      })
    : undefined;
  const runtimeClassGetter = apiRuntimeClasses ?? localRuntimeClasses;

  // Several managers need the pod workers, which the kubelet owns: reach them lazily.
  let kubelet: Kubelet | undefined;
  const workers = () => {
    if (!kubelet) throw new Error('kubelet not constructed yet');
    return kubelet.podWorkers;
  };
  const podStateProvider = {
    shouldPodContentBeRemoved: (uid: string) => workers().shouldPodContentBeRemoved(uid),
    shouldPodRuntimeBeRemoved: (uid: string) => workers().shouldPodRuntimeBeRemoved(uid),
    shouldPodContainersBeTerminating: (uid: string) => workers().shouldPodContainersBeTerminating(uid),
  };

  const podManager = new BasicPodManager();
  const podConfig = new PodConfig({ recorder, logger: logger.child({ component: 'config' }), clock });
  const sources: PodSource[] = [];
  const preventStaticPodAPIReferences = !options.allowStaticPodApiReferences;
  if (options.podManifestPath) {
    sources.push(
      new FileSource({
        path: path.resolve(options.podManifestPath),
        nodeName,
        clock,
        logger: logger.child({ source: 'file' }),
        recorder,
        preventStaticPodAPIReferences,
        onError: onSourceError,
        ...(options.fileCheckFrequencyMs !== undefined ? { period: options.fileCheckFrequencyMs } : {}),
      }),
    );
  }
  if (options.manifestUrl) {
    sources.push(
      new HttpSource({
        url: options.manifestUrl,
        nodeName,
        clock,
        logger: logger.child({ source: 'http' }),
        recorder,
        preventStaticPodAPIReferences,
        onError: onSourceError,
      }),
    );
  }
  if (kubeConfig) {
    let apiSource: ApiserverSource | undefined;
    sources.push({
      name: ApiserverSourceName,
      start: async (sink) => {
        apiSource = new ApiserverSource({
          kubeConfig: await kubeConfig(),
          nodeName,
          clock,
          logger: logger.child({ source: 'api' }),
          recorder,
          onError: onSourceError,
        });
        await apiSource.start(sink);
      },
      stop: async () => {
        await apiSource?.stop();
      },
    });
  }
  sources.push(...(options.sources ?? []));
  const podConfigView: PodConfigView = {
    updates: (signal) => podConfig.updates(signal ? { signal } : {}),
    seenAllSources: () => podConfig.seenAllSources(podConfig.sources),
    start: async () => {
      for (const s of sources) await podConfig.addSource(s);
    },
    stop: () => podConfig.stop(),
  };

  const criLimits = options.maxCriMessageBytes ? { maxMessageBytes: options.maxCriMessageBytes } : {};
  const runtimeService = instrumentCriClient(
    new RuntimeServiceClient({ endpoint: options.runtimeEndpoint, ...criLimits }),
    metrics,
  );
  const imageService = instrumentCriClient(
    new ImageServiceClient({ endpoint: options.runtimeEndpoint, ...criLimits }),
    metrics,
  );

  const sinks: StatusSink[] = [];
  let mirrorClient: MirrorClient | undefined;
  if (kubeConfig) {
    let client: Promise<PodStatusApi & MirrorPodApi> | undefined;
    const api = () =>
      (client ??= Promise.all([kubeConfig(), import('@kubernetes/client-node')]).then(([kc, m]) =>
        kc.makeApiClient(m.CoreV1Api),
      ));
    // Static pods show on the API server through their mirror pods.
    mirrorClient = new ApiserverMirrorClient({
      api: {
        createNamespacedPod: async (...args) => (await api()).createNamespacedPod(...args),
        deleteNamespacedPod: async (...args) => (await api()).deleteNamespacedPod(...args),
        readNode: async (...args) => (await api()).readNode(...args),
      },
      nodeName,
      logger,
    });
    sinks.push(
      new ApiserverStatusSink({
        api: {
          readNamespacedPod: async (...args) => (await api()).readNamespacedPod(...args),
          patchNamespacedPodStatus: async (...args) => (await api()).patchNamespacedPodStatus(...args),
          deleteNamespacedPod: async (...args) => (await api()).deleteNamespacedPod(...args),
        },
        logger: logger.child({ component: 'status-sink' }),
      }),
    );
  }
  const statusManager = newStatusManager({
    podManager,
    podDeletionSafety: {
      podCouldHaveRunningContainers: (pod: Pod) =>
        workers().couldHaveRunningContainers(pod.metadata?.uid ?? ''),
    },
    sinks,
    clock,
    logger: logger.child({ component: 'status' }),
  });

  const livenessManager = new DefaultResultsManager();
  const readinessManager = new DefaultResultsManager();
  const startupManager = new DefaultResultsManager();

  // One mounter and one subpather: the runtime binds subPaths, the volume manager and pod
  // cleanup unmount them.
  const mounter = new SystemMounter();
  const subpather = new SafeSubpather({ mounter, logger: logger.child({ component: 'subpath' }) });
  const volumeManager = new BasicVolumeManager({
    rootDirectory,
    mounter,
    subpather,
    getPods: () => podManager.getPods(),
    podStateProvider,
    sourcesReady: () => podConfigView.seenAllSources(),
    ...(objectGetter ? { objectGetter } : {}),
    nodeName,
    clock,
    logger: logger.child({ component: 'volumes' }),
    eventRecorder: recorder,
  });

  const runtime = new KubeGenericRuntimeManager({
    runtimeService,
    imageService,
    clock,
    logger: logger.child({ component: 'kuberuntime' }),
    recorder,
    livenessManager,
    startupManager,
    volumeProvider: volumeManager,
    subpather,
    ...(objectGetter ? { objectGetter } : {}),
    podStateProvider,
    rootDirectory,
    podLogsRootDirectory: options.podLogsDirectory ?? path.join(rootDirectory, 'logs', 'pods'),
    nodeName,
    nodeIPs,
    maxConcurrentCreationCalls: options.maxConcurrentCreationCalls ?? defaultMaxConcurrentCreationCalls,
    runtimeClassGetter,
  });
  const podFeatures: PodFeatureSupport = {
    appArmorHostError: appArmorHostError(),
    supplementalGroupsPolicy: () => runtime.runtimeFeatures().supplementalGroupsPolicy,
  };

  const probeManager = new DefaultProbeManager({
    statusProvider: statusManager,
    runner: runtime,
    clock,
    recorder,
    logger: logger.child({ component: 'prober' }),
    registry: metrics.registry,
    livenessManager,
    readinessManager,
    startupManager,
  });
  const resultManagers = { liveness: livenessManager, readiness: readinessManager, startup: startupManager };
  const probeView: ProbeManagerView = {
    start: () => probeManager.start(),
    stop: () => probeManager.stop(),
    addPod: (pod) => probeManager.addPod(pod),
    removePod: (pod) => probeManager.removePod(pod),
    cleanupPods: (uids) => probeManager.cleanupPods(uids),
    stopLivenessAndStartup: (pod) => probeManager.stopLivenessAndStartup(pod),
    updatePodStatus: (pod, status) => probeManager.updatePodStatus(pod, status),
    onResult: (type, listener) => resultManagers[type].subscribe(listener),
  };

  const podCache = new PodStatusCache();
  const pleg = new GenericPLEG({
    runtime,
    cache: podCache,
    clock,
    logger: logger.child({ component: 'pleg' }),
    // The sync loop takes events through watch(); an unread channel would fill and drop.
    channelCapacity: 0,
    onRelist: (r) => metrics.plegRelistDuration.observe(r.durationMs / 1000),
  });

  let networkReady = true;
  // Upstream runtimeState: when the runtime last answered Status ready, and why it is not ready.
  let lastRuntimeSync = 0;
  let runtimeNotReady: string | undefined;
  const runtimeErrors = (): string | undefined => {
    const errs: string[] = [];
    if (clock.since(lastRuntimeSync) > maxWaitForContainerRuntimeMs) errs.push('container runtime is down');
    if (runtimeNotReady) errs.push(runtimeNotReady);
    if (errs.length === 0) return undefined;
    return errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`;
  };
  kubelet = new Kubelet({
    nodeName,
    rootDirectory,
    subpather,
    nodeIPs,
    allocatable,
    node,
    sysctls,
    runtime,
    podConfig: podConfigView,
    podManager,
    statusManager,
    pleg,
    podCache,
    probeManager: probeView,
    volumeManager,
    ...(objectGetter ? { objectGetter } : {}),
    ...(mirrorClient ? { mirrorClient } : {}),
    clock,
    logger,
    recorder,
    metrics,
    networkReady: () => networkReady,
    podFeatures,
    runtimeErrors,
    ...(options.syncFrequencyMs !== undefined ? { resyncIntervalMs: options.syncFrequencyMs } : {}),
    ...(options.crashLoopBackOff ? { crashLoopBackOff: options.crashLoopBackOff } : {}),
    ...(options.maxConcurrentSyncs !== undefined ? { maxConcurrentSyncs: options.maxConcurrentSyncs } : {}),
    ...(options.maxConcurrentPodCreations !== undefined
      ? { maxConcurrentPodCreations: options.maxConcurrentPodCreations }
      : {}),
  });
  const k = kubelet;

  const server = new KubeletServer({
    ...(options.address !== undefined ? { address: options.address } : {}),
    port: options.port ?? 10250,
    pods: () => k.podsWithStatus(),
    healthChecks: [
      { name: 'syncloop', check: () => k.syncLoopHealthCheck() },
      {
        name: 'pleg',
        check: () => {
          const h = pleg.healthy();
          return h.healthy ? undefined : String(h.error ?? 'unhealthy');
        },
      },
    ],
    registry: metrics.registry,
    logger: logger.child({ component: 'server' }),
  });

  let bound: { address: string; port: number } | undefined;
  let statusTimer: { cancel(): void } | undefined;
  const checkRuntime = async () => {
    try {
      const conditions = await runtime.status();
      networkReady = conditions.find((c) => c.type === 'NetworkReady')?.status ?? true;
      const ready = conditions.find((c) => c.type === 'RuntimeReady');
      if (ready && !ready.status) {
        runtimeNotReady = `container runtime not ready: RuntimeReady=false reason:${ready.reason} message:${ready.message}`;
        return;
      }
      runtimeNotReady = undefined;
      lastRuntimeSync = clock.now();
    } catch (err) {
      logger.warn({ err: String(err) }, 'runtime status check failed');
    }
  };
  return {
    kubelet: k,
    metrics,
    recorder,
    node,
    allocatable,
    get address() {
      return bound;
    },
    sourceErrors,
    async start() {
      const version = await runtime.version();
      logger.info(
        { runtime: version.runtimeName, version: version.runtimeVersion, node: nodeName },
        'container runtime connected',
      );
      await checkRuntime();
      statusTimer = clock.setInterval(() => void checkRuntime(), 5000);
      const addr = await server.start();
      bound = { address: addr.address, port: addr.port };
      logger.info({ address: addr.address, port: addr.port }, 'serving /healthz, /pods, /metrics');
      apiRuntimeClasses?.start();
      await k.start();
    },
    async stop() {
      statusTimer?.cancel();
      await k.stop();
      await apiRuntimeClasses?.stop();
      await server.stop();
      runtimeService.close();
      imageService.close();
    },
  };
}

/**
 * Upstream's allocatable ephemeral storage: the capacity of the filesystem holding the root
 * directory less the default hard eviction threshold (nodefs.available < 10 %).
 */
function nodeEphemeralStorage(rootDirectory: string): number {
  // The root directory may not exist yet: its nearest existing ancestor is on the same filesystem.
  let dir = rootDirectory;
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const st = fs.statfsSync(dir);
  const capacity = st.blocks * st.bsize;
  return capacity - Math.floor(capacity * 0.1);
}

/** `hugepages-<size>` capacity in bytes from /sys/kernel/mm/hugepages, as cadvisor reports it. */
function hugePages(): Record<string, number> {
  const dir = '/sys/kernel/mm/hugepages';
  const out: Record<string, number> = {};
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const m = /^hugepages-(\d+)kB$/.exec(e);
    if (!m) continue;
    const kib = Number(m[1]);
    let pages = 0;
    try {
      pages = Number(fs.readFileSync(path.join(dir, e, 'nr_hugepages'), 'utf8').trim()) || 0;
    } catch {
      // Unreadable: none of that size.
    }
    const size =
      kib % 1048576 === 0 ? `${kib / 1048576}Gi` : kib % 1024 === 0 ? `${kib / 1024}Mi` : `${kib}Ki`;
    out[`hugepages-${size}`] = pages * kib * 1024;
  }
  return out;
}
