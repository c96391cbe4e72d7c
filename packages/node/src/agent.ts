import os from 'node:os';
import path from 'node:path';
import {
  type Clock,
  type EventRecorder,
  type Logger,
  type Node,
  type NodeAllocatable,
  noopLogger,
  type OfflineStore,
  type Pod,
  RealClock,
} from '@kubelet-kit/core';
import {
  ContainerLogManager,
  getContainerLogs,
  type ImageGCManager,
  KubeGenericRuntimeManager,
} from '@kubelet-kit/kuberuntime';
import { EventedPLEG } from '@kubelet-kit/pleg';
import { PodConfig, type PodSource } from '@kubelet-kit/pod-config';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import { killPodNow } from '@kubelet-kit/pod-workers';
import { DefaultProbeManager, DefaultResultsManager } from '@kubelet-kit/prober';
import { newStatusManager } from '@kubelet-kit/status-manager';
import { BasicVolumeManager, SafeSubpather, SystemMounter } from '@kubelet-kit/volume-manager';
import { createApiClients } from './api-clients.js';
import { ContainerManager } from './cm/container-manager.js';
import { nodeCgroupAmounts } from './cm/node-allocatable-cgroups.js';
import { kubeletConfigz } from './configz.js';
import { criContainerEventSource } from './container-events.js';
import type { ProbeManagerView } from './deps.js';
import { createEvictionManager, evictionThresholds } from './eviction.js';
import { checkImageOptions, createImageGC, imagePullSettings } from './image-gc.js';
import { Kubelet } from './kubelet.js';
import { loggingRecorder } from './logging-recorder.js';
import { KubeletMetrics } from './metrics.js';
import { type NodeInfo, type NodeTaint, nodeLabels } from './node-info.js';
import { createNodeStatus, nodeResources } from './node-status.js';
import { appArmorHostError, type PodFeatureSupport } from './pod-feature-admission.js';
import { createPodSources, podConfigView as podConfigViewOf, sourceErrorLog } from './pod-sources.js';
import { runningPodsToApi } from './running-pods.js';
import { createCriServices, createPleg, RuntimeState } from './runtime-state.js';
import { KubeletServer } from './server.js';
import {
  type KubeletAuthenticationOptions,
  type KubeletAuthorizationOptions,
  serverSecurity,
} from './server-security.js';
import { StreamingServer } from './server-streaming.js';
import type { KubeletTlsOptions } from './server-tls.js';
import { createSummaryProvider } from './stats/index.js';
import { SysctlAllowlist } from './sysctl.js';
import { teeRecorder } from './tee-recorder.js';

/**
 * Creation calls in flight at once. On a 2-core machine, where containerd is CPU-bound during a
 * burst, the agent had 110 pods Running 6-8 % sooner with 4 calls in flight than with 16 pods
 * created at a time and no bound on calls.
 */
const defaultMaxConcurrentCreationCalls = 4;

/**
 * Options of {@link createAgent}: the `kubelet-kit run` flags, as an object.
 *
 * @public
 */
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
  /**
   * Offline operation with a kubeconfig (--offline-store-dir): the folder of the on-disk store
   * that keeps the node's pods, their ConfigMaps, Secrets and tokens, the Node and the last
   * statuses, so the agent manages its pods while the API server is away and across restarts.
   */
  readonly offlineStoreDirectory?: string;
  /** The same with a store of the embedder's own (it wins over `offlineStoreDirectory`). */
  readonly offlineStore?: OfflineStore;
  /** Let static pods reference ConfigMaps, Secrets and the like (upstream forbids it). */
  readonly allowStaticPodApiReferences?: boolean;
  /** Upstream --max-pods; default 110. */
  readonly maxPods?: number;
  /** HTTP endpoints' address; default 127.0.0.1. */
  readonly address?: string;
  /** HTTP endpoints' port; default 10250, 0 for any free one. */
  readonly port?: number;
  // The kubelet API's transport and auth: HTTPS once any of these is set or the address is
  // not loopback (upstream's flags of the same names).
  /** TLS files, the client CA, the self-signed pair's directory, minimum version and ciphers. */
  readonly serverTls?: KubeletTlsOptions;
  readonly authentication?: KubeletAuthenticationOptions;
  readonly authorization?: KubeletAuthorizationOptions;
  /** Upstream --read-only-port: the unauthenticated read-only subset over HTTP; default 0 (off). */
  readonly readOnlyPort?: number;
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
  /** Upstream --cluster-dns: the cluster DNS servers' IPs for ClusterFirst pods; default none. */
  readonly clusterDNS?: readonly string[];
  /** Upstream --cluster-domain: the cluster's DNS domain; default none (no cluster search domains). */
  readonly clusterDomain?: string;
  /** Upstream --resolv-conf: the base of the pods' resolv.conf; default `/etc/resolv.conf`, '' none. */
  readonly resolvConf?: string;
  /** Allocatable ephemeral storage, bytes; default the root directory's filesystem less 10 %. */
  readonly ephemeralStorageBytes?: number;
  // Node registration and status (with a kubeconfig), upstream's flags of the same names.
  /** Upstream --register-node: create the Node (default true); false: only update an existing one. */
  readonly registerNode?: boolean;
  /**
   * Upstream --node-ip as given: one IP or a dual-stack pair, comma-separated. The Node's
   * InternalIP, checked as upstream (not loopback, on a host interface); default found from the
   * node name's DNS answer or the host's interfaces. Pods' host IPs follow it unless `nodeIPs` is set.
   */
  readonly nodeIP?: string;
  /** Upstream --node-status-update-frequency: how often the Node's status is computed; default 10 s. */
  readonly nodeStatusUpdateFrequencyMs?: number;
  /**
   * Upstream --node-status-report-frequency: an unchanged status is still sent this often;
   * default 5 min, or the update frequency when only that is given (upstream's defaulting).
   */
  readonly nodeStatusReportFrequencyMs?: number;
  /** Upstream --system-reserved, e.g. `{ cpu: '100m', memory: '100Mi' }`: taken off allocatable. */
  readonly systemReserved?: Readonly<Record<string, string>>;
  /** Upstream --kube-reserved, e.g. `{ cpu: '100m', memory: '100Mi' }`: taken off allocatable. */
  readonly kubeReserved?: Readonly<Record<string, string>>;
  // Container log rotation (upstream's ContainerLogManager flags and defaults).
  /** Rotate a container's log at this size (`--container-log-max-size`, default 10Mi). */
  readonly containerLogMaxSizeBytes?: number;
  /** Log files kept per container, the current one included (`--container-log-max-files`, default 5). */
  readonly containerLogMaxFiles?: number;
  /** Containers rotated at once (`--container-log-max-workers`, default 1). */
  readonly containerLogMaxWorkers?: number;
  /** How often logs are checked (`--container-log-monitor-interval`, default 10 s). */
  readonly containerLogMonitorIntervalMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** Upstream --event-qps: event requests per second to the API server; default 50. */
  readonly eventQPS?: number;
  /** Upstream --event-burst: event requests allowed at once above that; default 100. */
  readonly eventBurst?: number;
  /** Upstream --node-lease-duration-seconds: the node Lease's duration; default 40, renewed every quarter. */
  readonly nodeLeaseDurationSeconds?: number;
  // Feature gates (upstream --feature-gates).
  /**
   * Upstream's feature gates by name. `EventedPLEG: true` watches the runtime's container
   * events (CRI GetContainerEvents) and relists every 300 s beside them; a runtime without the
   * method (containerd 1.6) falls back to relisting every second.
   */
  readonly featureGates?: Readonly<Record<string, boolean>>;
  // Images (upstream's image manager and image GC).
  /** Upstream --image-gc-high-threshold: image filesystem usage, percent, that starts GC; default 85. */
  readonly imageGCHighThresholdPercent?: number;
  /** Upstream --image-gc-low-threshold: usage, percent, GC frees down to; default 80. */
  readonly imageGCLowThresholdPercent?: number;
  /** Upstream --image-minimum-gc-age: an image younger than this is never collected; default 2 min. */
  readonly imageMinimumGCAgeMs?: number;
  /** Upstream --image-maximum-gc-age: unused images older than this are collected; default 0 (off). */
  readonly imageMaximumGCAgeMs?: number;
  /** How often images are collected, ms; default 5 min (upstream's fixed ImageGCPeriod; for tests). */
  readonly imageGCPeriodMs?: number;
  /** Upstream --serialize-image-pulls: one pull at a time; default true. */
  readonly serializeImagePulls?: boolean;
  /** Upstream --max-parallel-image-pulls (only with serializeImagePulls false); default no bound. */
  readonly maxParallelImagePulls?: number;
  /** Upstream --registry-qps: pulls started per second, 0 unlimited; default 5. */
  readonly registryPullQPS?: number;
  /** Upstream --registry-burst: pulls allowed at once above that; default 10. */
  readonly registryBurst?: number;
  /**
   * Called with each rejected manifest (pod-config's `PodValidationError`: file or URL, object
   * and field paths) and each source error, besides the log line and {@link Agent.sourceErrors}.
   */
  readonly onSourceError?: (error: Error) => void;

  // ---- pod cgroups (upstream pkg/kubelet/cm) ----
  /**
   * Upstream --cgroups-per-qos: pods in `kubepods`/`burstable`/`besteffort`/`pod<uid>` cgroups.
   * Default false here (upstream: true): agents sharing a host would remove each other's pod
   * cgroups as orphans unless each has its own `cgroupRoot`.
   */
  readonly cgroupsPerQOS?: boolean;
  /** Upstream --cgroup-driver, `cgroupfs` (default) or `systemd`: must be the runtime's. */
  readonly cgroupDriver?: 'cgroupfs' | 'systemd';
  /** Upstream --cgroup-root, default `/`. */
  readonly cgroupRoot?: string;
  /** Upstream --pod-max-pids: each pod cgroup's pids.max; -1 (default) for none. */
  readonly podPidsLimit?: number;
  /** Upstream --enforce-node-allocatable; default `['pods']` (kubepods at allocatable). */
  readonly enforceNodeAllocatable?: readonly string[];
  /** Where the cgroup hierarchy is mounted; default /sys/fs/cgroup. */
  readonly cgroupMountPoint?: string;

  // ---- eviction (upstream pkg/kubelet/eviction) ----
  /**
   * Upstream --eviction-hard, signal → quantity or percentage, e.g. `{ 'memory.available': '100Mi' }`;
   * given, it replaces upstream's defaults (memory.available<100Mi, nodefs.available<10%,
   * nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%).
   */
  readonly evictionHard?: Readonly<Record<string, string>>;
  /** Upstream --eviction-soft; each signal needs an {@link AgentOptions.evictionSoftGracePeriod}. */
  readonly evictionSoft?: Readonly<Record<string, string>>;
  /** Upstream --eviction-soft-grace-period, signal → Go duration, e.g. `{ 'memory.available': '1m30s' }`. */
  readonly evictionSoftGracePeriod?: Readonly<Record<string, string>>;
  /** Upstream --eviction-minimum-reclaim, signal → quantity or percentage. */
  readonly evictionMinimumReclaim?: Readonly<Record<string, string>>;
  /** Upstream --eviction-pressure-transition-period: how long a pressure condition stays; default 5 min. */
  readonly evictionPressureTransitionPeriodMs?: number;
  /** Upstream --eviction-max-pod-grace-period: seconds at most for pods evicted under a soft threshold; default 0. */
  readonly evictionMaxPodGracePeriod?: number;
  /** How often the eviction manager looks, ms; default 10 s (upstream's fixed period; for tests). */
  readonly evictionMonitoringPeriodMs?: number;
}

/**
 * A running agent: the kubelet, its HTTP endpoints and what it was built from.
 *
 * @public
 */
export interface Agent {
  readonly kubelet: Kubelet;
  readonly metrics: KubeletMetrics;
  readonly recorder: EventRecorder;
  /** This node's name, labels and taints as admission sees them; node registration can reuse them. */
  readonly node: NodeInfo;
  /** What pods may request of the node (cpu, memory, pods, ephemeral storage, scalar resources). */
  readonly allocatable: NodeAllocatable;
  /** Node registration and status, with a kubeconfig: resolves with the Node once registered. */
  readonly nodeStatus?: { registeredNode(): Promise<Node> };
  /** The bound address of the HTTP endpoints, once started. */
  readonly address: { readonly address: string; readonly port: number } | undefined;
  /** Rejections of manifests and other source errors, newest last (bounded). */
  readonly sourceErrors: readonly string[];
  /** Image garbage collection; `deleteUnusedImages` is for node-level reclaim (eviction). */
  readonly imageGCManager: ImageGCManager;
  start(): Promise<void>;
  /** Stops the agent; the containers keep running, and a new agent adopts them. */
  stop(): Promise<void>;
}

function defaultNodeIPs(): string[] {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return [a.address];
  }
  return ['127.0.0.1'];
}

/**
 * Builds a node agent from the kubelet-kit packages, as `kubelet-kit run` does.
 *
 * @public
 */
export function createAgent(options: AgentOptions): Agent {
  const clock = options.clock ?? new RealClock();
  const logger = options.logger ?? noopLogger;
  // With a kubeconfig, events also go to the API server (its recorder comes with the API clients).
  const apiEvents: { recorder?: EventRecorder | undefined } = {};
  const recorder = teeRecorder(options.recorder ?? loggingRecorder(logger), apiEvents);
  const nodeName = (options.nodeName ?? os.hostname()).toLowerCase();
  const rootDirectory = path.resolve(options.rootDirectory ?? '/var/lib/kubelet-kit');
  // --node-ip: the Node's address, and the pods' host IPs unless nodeIPs is given.
  const nodeIPFlag = (options.nodeIP ?? '')
    .split(',')
    .map((ip) => ip.trim())
    .filter((ip) => ip !== '');
  const givenNodeIPs = nodeIPFlag.filter((ip) => ip !== '0.0.0.0' && ip !== '::');
  const nodeIPs = options.nodeIPs ?? (givenNodeIPs.length ? givenNodeIPs : defaultNodeIPs());
  const metrics = new KubeletMetrics();
  // Bad eviction thresholds throw here, naming the flag, before anything starts.
  const thresholds = evictionThresholds(options);
  // Allocatable as the Node reports it (reservations and eviction thresholds off), for admission too.
  const resources = nodeResources({
    rootDirectory,
    maxPods: options.maxPods,
    ephemeralStorageBytes: options.ephemeralStorageBytes,
    extendedResources: options.extendedResources,
    systemReserved: options.systemReserved,
    kubeReserved: options.kubeReserved,
    hardEvictionThresholds: thresholds,
  });
  const allocatable = resources.allocatable;
  const node: NodeInfo = {
    name: nodeName,
    labels: nodeLabels(nodeName, options.nodeLabels),
    taints: options.registerWithTaints ?? [],
  };
  const sysctls = SysctlAllowlist.forNode(options.allowedUnsafeSysctls);
  const { errors: sourceErrors, onError: onSourceError } = sourceErrorLog(logger, options.onSourceError);

  const api = createApiClients({
    kubeconfig: options.kubeconfig,
    objectDirectory: options.objectDirectory,
    runtimeClasses: options.runtimeClasses,
    nodeName,
    clock,
    logger,
    eventQPS: options.eventQPS,
    eventBurst: options.eventBurst,
    nodeLeaseDurationSeconds: options.nodeLeaseDurationSeconds,
    // Offline operation (--offline-store-dir): pods and objects kept on disk, writes queued.
    offlineStore: options.offlineStore,
    offlineStoreDirectory: options.offlineStoreDirectory,
  });
  apiEvents.recorder = api.eventRecorder;
  const { objectGetter } = api;

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
  const sources = createPodSources({
    podManifestPath: options.podManifestPath,
    manifestUrl: options.manifestUrl,
    fileCheckFrequencyMs: options.fileCheckFrequencyMs,
    allowStaticPodApiReferences: options.allowStaticPodApiReferences,
    apiserverSource: api.podSource({ recorder, onError: onSourceError }),
    sources: options.sources,
    nodeName,
    clock,
    logger,
    recorder,
    onError: onSourceError,
  });
  const podConfigView = podConfigViewOf(podConfig, sources);
  const cri = createCriServices({
    endpoint: options.runtimeEndpoint,
    maxMessageBytes: options.maxCriMessageBytes,
    metrics,
  });

  const statusManager = newStatusManager({
    podManager,
    podDeletionSafety: {
      podCouldHaveRunningContainers: (pod: Pod) =>
        workers().couldHaveRunningContainers(pod.metadata?.uid ?? ''),
    },
    sinks: [...api.statusSinks],
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
    ...(api.tokenGetter ? { tokenGetter: api.tokenGetter } : {}),
    nodeName,
    // Memory-backed emptyDirs without a pod limit are sized to it, as upstream's GetNodeAllocatable.
    nodeAllocatable: () => allocatable,
    clock,
    logger: logger.child({ component: 'volumes' }),
    eventRecorder: recorder,
  });

  checkImageOptions(options);
  let evictionManager: ReturnType<typeof createEvictionManager> | undefined;
  // Pod cgroups (--cgroups-per-qos): the sandbox's parent is the pod's cgroup.
  const podCgroups = options.cgroupsPerQOS
    ? new ContainerManager({
        cgroupDriver: options.cgroupDriver,
        cgroupRoot: options.cgroupRoot,
        podPidsLimit: options.podPidsLimit,
        enforceNodeAllocatable: options.enforceNodeAllocatable,
        cgroupMountPoint: options.cgroupMountPoint,
        ...nodeCgroupAmounts(options.systemReserved, options.kubeReserved),
        activePods: () =>
          podManager.getPods().filter((p) => !workers().isPodTerminationRequested(p.metadata?.uid ?? '')),
        logger: logger.child({ component: 'cm' }),
      })
    : undefined;

  const runtime = new KubeGenericRuntimeManager({
    ...(podCgroups ? { cgroupParent: (pod: Pod) => podCgroups.cgroupParent(pod) } : {}),
    runtimeService: cri.runtimeService,
    imageService: cri.imageService,
    ...imagePullSettings(options),
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
    runtimeClassGetter: api.runtimeClasses,
    dns: {
      ...(options.clusterDNS ? { clusterDNS: options.clusterDNS } : {}),
      ...(options.clusterDomain !== undefined ? { clusterDomain: options.clusterDomain } : {}),
      ...(options.resolvConf !== undefined ? { resolvConf: options.resolvConf } : {}),
    },
    ...(api.serviceLister ? { serviceLister: api.serviceLister } : {}),
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

  // Container log rotation: bad settings fail here, before anything starts.
  const containerLogManager = new ContainerLogManager({
    runtimeService: cri.runtimeService,
    ...(options.containerLogMaxSizeBytes !== undefined
      ? { maxSizeBytes: options.containerLogMaxSizeBytes }
      : {}),
    ...(options.containerLogMaxFiles !== undefined ? { maxFiles: options.containerLogMaxFiles } : {}),
    ...(options.containerLogMaxWorkers !== undefined ? { maxWorkers: options.containerLogMaxWorkers } : {}),
    ...(options.containerLogMonitorIntervalMs !== undefined
      ? { monitorIntervalMs: options.containerLogMonitorIntervalMs }
      : {}),
    clock,
    logger: logger.child({ component: 'container-log-manager' }),
  });
  const { pleg, podCache } = createPleg({ runtime, clock, logger, metrics });
  // Feature gate EventedPLEG: runtime events beside the generic relist, which it slows down.
  const eventedPleg = options.featureGates?.EventedPLEG
    ? new EventedPLEG({
        source: criContainerEventSource(cri.runtimeService),
        generic: pleg,
        runtime,
        clock,
        logger,
        onFallback: (err) =>
          logger.warn({ err }, 'EventedPLEG: runtime events unavailable; relisting every second'),
      })
    : undefined;
  const runtimeState = new RuntimeState({ runtime, clock, logger });
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
    // A pod waiting for the teardown of its volumes wakes the desired-state populator (which
    // backs off to 1 s while nothing changes). A pod waiting for its mounts does not: the wait
    // adds the pod and starts its mounts itself, and a populator pass visits every pod (0.3 s at
    // 10,000 pods with volumes), so one per pod sync cost the square of the pod count.
    volumeManager: {
      start: () => volumeManager.start(),
      stop: () => volumeManager.stop(),
      waitForAttachAndMount: (pod, o) => volumeManager.waitForAttachAndMount(pod, o),
      waitForUnmount: (pod, o) => {
        volumeManager.podsChanged();
        return volumeManager.waitForUnmount(pod, o);
      },
    },
    ...(objectGetter ? { objectGetter } : {}),
    ...(api.mirrorClient ? { mirrorClient: api.mirrorClient } : {}),
    clock,
    logger,
    recorder,
    metrics,
    networkReady: () => runtimeState.networkReady(),
    podFeatures,
    runtimeErrors: () => runtimeState.runtimeErrors(),
    ...(podCgroups ? { podCgroups } : {}),
    evictionAdmit: (pod: Pod) => evictionManager?.admit(pod) ?? { admit: true },
    ...(options.syncFrequencyMs !== undefined ? { resyncIntervalMs: options.syncFrequencyMs } : {}),
    ...(options.crashLoopBackOff ? { crashLoopBackOff: options.crashLoopBackOff } : {}),
    ...(options.maxConcurrentSyncs !== undefined ? { maxConcurrentSyncs: options.maxConcurrentSyncs } : {}),
    ...(options.maxConcurrentPodCreations !== undefined
      ? { maxConcurrentPodCreations: options.maxConcurrentPodCreations }
      : {}),
  });
  const k = kubelet;
  const imageGCManager = createImageGC(options, {
    runtimeService: cri.runtimeService,
    imageService: cri.imageService,
    clock,
    logger: logger.child({ component: 'image-gc' }),
    recorder,
    nodeName,
  });

  // The summary API and its siblings (/stats/summary, /metrics/resource, /metrics/probes,
  // /runningpods/, /configz).
  const podLogsDirectory = options.podLogsDirectory ?? path.join(rootDirectory, 'logs', 'pods');
  const summaryProvider = createSummaryProvider({
    nodeName,
    rootDirectory,
    podLogsDirectory,
    runtimeService: cri.runtimeService,
    imageService: cri.imageService,
    getPods: () => podManager.getPods(),
    getMountedVolumesForPod: (uid) => volumeManager.getMountedVolumesForPod(uid),
    clock,
    logger: logger.child({ component: 'stats' }),
  });
  // The eviction manager: thresholds on the summary's signals, reclaim, one pod per cycle.
  evictionManager = createEvictionManager(options, thresholds, {
    rootDirectory,
    nodeName,
    summary: () => summaryProvider.get(),
    nodeSummary: () => summaryProvider.getNodeOnly(),
    imageService: cri.imageService,
    activePods: () => k.getActivePods(),
    podCleanedUp: (pod) =>
      k.podResourcesAreReclaimed(pod) &&
      volumeManager.getMountedVolumesForPod(pod.metadata?.uid ?? '').size === 0,
    killPod: killPodNow({ podWorkers: k.podWorkers, recorder, clock }),
    deleteAllUnusedContainers: () => k.deleteAllUnusedContainers(),
    deleteUnusedImages: () => imageGCManager.deleteUnusedImages(),
    recorder,
    clock,
    logger: logger.child({ component: 'eviction' }),
  });
  const eviction = evictionManager;
  const statsHandlers = {
    summary: () => summaryProvider.get(),
    cpuAndMemory: () => summaryProvider.getCPUAndMemoryStats(),
    runningPods: async () => runningPodsToApi(await runtime.getPods(false)),
    configz: () =>
      kubeletConfigz(options, {
        rootDirectory,
        podLogsDirectory,
        port: bound?.port ?? options.port ?? 10250,
      }),
    probeRegistry: metrics.registry,
    logger: logger.child({ component: 'server-stats' }),
  };

  const security = serverSecurity({
    address: options.address ?? '127.0.0.1',
    tls: { certDirectory: path.join(rootDirectory, 'pki'), ...options.serverTls },
    authentication: options.authentication ?? {},
    authorization: options.authorization ?? {},
    kubeConfig: api.kubeConfig,
    nodeName,
    ips: nodeIPs,
    clock,
    logger: logger.child({ component: 'server-auth' }),
  });
  const server = new KubeletServer({
    stats: statsHandlers,
    ...(options.address !== undefined ? { address: options.address } : {}),
    ...(security.tls ? { tls: security.tls } : {}),
    ...(security.auth ? { auth: security.auth } : {}),
    ...(options.readOnlyPort ? { readOnlyPort: options.readOnlyPort } : {}),
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
    // exec, attach, port-forward and run, through the runtime's streaming server.
    streaming: new StreamingServer({
      pods: () => k.podsWithStatus(),
      runtimePods: () => runtime.getPods(false),
      runtimeService: cri.runtimeService,
      logger: logger.child({ component: 'streaming' }),
    }),
    // /containerLogs: the pod and its status as /pods shows them, the file from the runtime.
    containerLogs: {
      getPodByName: (namespace, name) =>
        k.podsWithStatus().find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name),
      getContainerLogs: (containerId, logOptions, stdout, stderr, signal) =>
        getContainerLogs(cri.runtimeService, containerId, logOptions, stdout, stderr, {
          clock,
          logger: logger.child({ component: 'logs' }),
          signal,
        }),
    },
  });

  let bound: { address: string; port: number } | undefined;
  // Node registration and status, only with an API server (upstream: kubeClient set).
  const nodeStatusUpdateFrequencyMs = options.nodeStatusUpdateFrequencyMs;
  const nodeStatus = api.nodeApi
    ? createNodeStatus({
        nodeName,
        api: api.nodeApi,
        labels: node.labels,
        taints: node.taints,
        registerNode: options.registerNode ?? true,
        // Only --node-ip is checked and reported as given; without it the address is found.
        nodeIPs: nodeIPFlag,
        resources,
        runtimeVersion: () => runtime.version(),
        listImages: async () =>
          ((await cri.imageService.listImages({})).images ?? []).map((i) => ({
            id: i.id,
            repoTags: i.repoTags,
            repoDigests: i.repoDigests,
            size: Number(i.size),
          })),
        runtimeErrors: () => runtimeState.runtimeErrorList(),
        networkErrors: () => runtimeState.networkErrors(),
        plegError: () => {
          const h = pleg.healthy();
          return h.healthy ? undefined : String(h.error?.message ?? 'unhealthy');
        },
        volumesSynced: () => volumeManager.reconcilerStatesHasBeenSynced(),
        pressure: eviction,
        kubeletPort: () => bound?.port ?? options.port ?? 10250,
        nodeStatusUpdateFrequencyMs,
        // Upstream's defaulting: the report frequency follows an explicit update frequency.
        nodeStatusReportFrequencyMs: options.nodeStatusReportFrequencyMs ?? nodeStatusUpdateFrequencyMs,
        clock,
        logger,
        recorder,
      })
    : undefined;
  return {
    kubelet: k,
    metrics,
    recorder,
    node,
    allocatable,
    ...(nodeStatus ? { nodeStatus } : {}),
    get address() {
      return bound;
    },
    sourceErrors,
    imageGCManager,
    async start() {
      const version = await runtime.version();
      logger.info(
        { runtime: version.runtimeName, version: version.runtimeVersion, node: nodeName },
        'container runtime connected',
      );
      await runtimeState.start();
      podCgroups?.start();
      const addr = await server.start();
      bound = { address: addr.address, port: addr.port };
      logger.info(
        { address: addr.address, port: addr.port, scheme: security.tls ? 'https' : 'http' },
        'serving /healthz, /pods, /metrics',
      );
      const readOnly = server.readOnlyAddress();
      if (readOnly)
        logger.info({ address: readOnly.address, port: readOnly.port }, 'serving the read-only port');
      api.start();
      nodeStatus?.start();
      // Upstream checks the node's resolv.conf once, as its sync loop starts.
      runtime.checkLimitsForResolvConf();
      await k.start();
      eventedPleg?.start();
      eviction.start(options.evictionMonitoringPeriodMs);
      // Upstream's StartGarbageCollection: image GC at once, then every ImageGCPeriod.
      imageGCManager.start();
      containerLogManager.start();
      // The heartbeat starts once the agent runs.
      api.nodeLease?.start();
    },
    async stop() {
      eviction.stop();
      await api.nodeLease?.stop();
      runtimeState.stop();
      await imageGCManager.stop();
      await nodeStatus?.stop();
      eventedPleg?.stop();
      await k.stop();
      await containerLogManager.stop();
      await api.eventRecorder?.stop();
      await api.stop();
      await server.stop();
      cri.close();
    },
  };
}
