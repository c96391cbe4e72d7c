import os from 'node:os';
import path from 'node:path';
import {
  Backoff,
  type Clock,
  type CommandRunner,
  CommandTimeoutError,
  type Container,
  type EventRecorder,
  type ExecResult,
  isRestartableInitContainer,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type ObjectGetter,
  type Pod,
  type PodSyncResult,
  type ProbeResultsReader,
  podEventReference,
  RealClock,
  type RunInContainerOptions,
  type Runtime,
  type RuntimeClassGetter,
  type RuntimeCondition,
  type RuntimeContainerStatus,
  type RuntimeGarbageCollectOptions,
  type RuntimeGetPodStatusOptions,
  type RuntimeKillPodOptions,
  type RuntimePod,
  type RuntimePodStatus,
  type RuntimeSandboxStatus,
  type RuntimeSyncPodOptions,
  type RuntimeVersion,
  runtimePodFromStatus,
  type ServiceLister,
  type Subpather,
  type SyncResult,
  type VolumeProvider,
} from '@kubelet-kit/core';
import {
  ContainerState,
  type ContainerStatus as CriContainerStatus,
  CriError,
  type PodSandboxStatus as CriPodSandboxStatus,
  ImageServiceClient,
  type PartialMessage,
  type PodSandboxConfig,
  PodSandboxState,
  RuntimeServiceClient,
} from '@kubelet-kit/cri';
import PQueue from 'p-queue';
import {
  type ContainerContext,
  containerRef,
  type KillContainerOptions,
  killContainer,
  killContainersWithSyncResult,
  pruneInitContainersBeforeStart,
  purgeInitContainers,
  removeContainer,
  removeSupersededNeverStarted,
  type StartSpec,
  startContainer,
  toContainerStatus,
} from './container.js';
import { DNSConfigurer, type DNSOptions } from './dns.js';
import { errorMessage, goErrorString, KubeRuntimeError } from './errors.js';
import { containerGC, type GCPodStateProvider } from './gc.js';
import { findContainerStatusByName, formatGoDuration, getStableKey, podDesc } from './helpers.js';
import { ImageManager, type ImageService } from './images.js';
import { podUIDLabel } from './labels.js';
import { HandlerRunner } from './lifecycle.js';
import { computePodActions, type PodActions } from './pod-actions.js';
import { PodListing } from './pod-listing.js';
import { lookupRuntimeHandler } from './runtime-class.js';
import {
  createPodSandbox,
  podIPsOf,
  type SandboxContext,
  SandboxCreationError,
  toSandboxStatus,
} from './sandbox.js';
import { defaultPodLogsRootDirectory, generatePodSandboxConfig } from './sandbox-config.js';
import { StatusCache } from './status-cache.js';
import {
  type RuntimeHandlerInfo,
  UserNamespaceManager,
  type UserNamespaceManagerOptions,
} from './user-namespaces.js';

// The generic runtime manager (upstream `kuberuntime_manager.go`): SyncPod, KillPod,
// GetPodStatus, GetPods over the container and sandbox functions of container.ts and sandbox.ts.

/** What the runtime implements, from its last Status (CRI `RuntimeFeatures`). @public */
export interface RuntimeFeatures {
  readonly supplementalGroupsPolicy: boolean;
  readonly userNamespacesHostNetwork: boolean;
}

/**
 * The RuntimeService calls kuberuntime makes (a `RuntimeServiceClient` of `@kubelet-kit/cri` fits).
 * @public
 */
export type RuntimeService = Pick<
  RuntimeServiceClient,
  | 'version'
  | 'status'
  | 'runPodSandbox'
  | 'stopPodSandbox'
  | 'removePodSandbox'
  | 'podSandboxStatus'
  | 'listPodSandbox'
  | 'createContainer'
  | 'startContainer'
  | 'stopContainer'
  | 'removeContainer'
  | 'listContainers'
  | 'containerStatus'
  | 'execSync'
>;

// The kubelet's crash-loop backoff: 10 s doubling to 300 s, reset after 10 minutes of running.
/** The first crash-loop backoff, ms. @public */
export const crashLoopBackOffInitialMs = 10_000;
/** The longest crash-loop backoff, ms. @public */
export const crashLoopBackOffMaxMs = 300_000;
/** A container that ran this long (ms) starts its crash-loop backoff over. @public */
export const crashLoopBackOffResetMs = 600_000;

/**
 * A crash-loop backoff with the kubelet's settings (initial and max can be changed, as the
 * kubelet's config).
 * @public
 */
export function newCrashLoopBackOff(
  options: { clock?: Clock; initialMs?: number; maxMs?: number } = {},
): Backoff {
  return new Backoff({
    clock: options.clock ?? new RealClock(),
    initialMs: options.initialMs ?? crashLoopBackOffInitialMs,
    maxMs: options.maxMs ?? crashLoopBackOffMaxMs,
    // Whatever the cap, a container that ran 10 minutes starts over.
    hasExpired: (eventTime, lastUpdate) => eventTime - lastUpdate > crashLoopBackOffResetMs,
  });
}

/** Options of {@link KubeGenericRuntimeManager}. @public */
export interface KubeGenericRuntimeManagerOptions {
  /** The CRI RuntimeService; or give `endpoint`. */
  readonly runtimeService?: RuntimeService;
  /** The CRI ImageService; defaults to one on `imageEndpoint` or `endpoint`. */
  readonly imageService?: ImageService;
  /** A CRI endpoint (`unix:///run/containerd/containerd.sock`) to dial when no services are given. */
  readonly endpoint?: string;
  readonly imageEndpoint?: string;
  /** The runtime's name for container IDs (`containerd`); read from Version when absent. */
  readonly runtimeName?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** Liveness results by container ID, for computePodActions. */
  readonly livenessManager?: ProbeResultsReader;
  /** Startup results by container ID, for computePodActions. */
  readonly startupManager?: ProbeResultsReader;
  /** Mounted volumes of pods; without it a container with volume mounts fails to start. */
  readonly volumeProvider?: VolumeProvider;
  /**
   * Binds volume subPaths without following links out of the volume (upstream's subpather);
   * without it a container with a subPath fails with CreateContainerConfigError.
   */
  readonly subpather?: Subpather;
  /** ConfigMaps and Secrets for env; without it references to them fail (unless optional). */
  readonly objectGetter?: ObjectGetter;
  /** Which pods' leftovers garbage collection may remove. */
  readonly podStateProvider?: GCPodStateProvider;
  /** The kubelet root (`/var/lib/kubelet`): termination message files go under `pods/<uid>/containers`. */
  readonly rootDirectory?: string;
  /** Default `/var/log/pods`. */
  readonly podLogsRootDirectory?: string;
  readonly nodeName?: string;
  /** The node's IPs, for status.hostIP(s). */
  readonly nodeIPs?: readonly string[];
  /** The sandbox cgroup parent, or a function of the pod. Default: empty (the runtime decides). */
  readonly cgroupParent?: string | ((pod: Pod) => string);
  /** Cluster DNS (`--cluster-dns`, `--cluster-domain`, `--resolv-conf`); default: the host's resolv.conf. */
  readonly dns?: DNSOptions;
  /**
   * The Services whose variables containers get (upstream's service lister); without it none.
   * Until it has synced, a container of a pod from the API server fails to start.
   */
  readonly serviceLister?: ServiceLister;
  /** Machine memory for the burstable OOM score; default `os.totalmem()`. */
  readonly memoryCapacity?: number;
  readonly cpuCFSQuota?: boolean;
  readonly cpuCFSQuotaPeriod?: number;
  /** Parallel image pulls; 1 (default) pulls serially, Infinity does not limit. */
  readonly maxParallelImagePulls?: number;
  /** See `ImageManagerOptions.registryPullQPS` (0 or unset: no limit). */
  readonly registryPullQPS?: number;
  /** See `ImageManagerOptions.registryBurst` (default 10). */
  readonly registryBurst?: number;
  /** See `ImageManagerOptions.presentImageTtlMs` (default 1 s; 0 asks the runtime on every start). */
  readonly presentImageTtlMs?: number;
  /** The image pull backoff (default 10 s → 300 s). */
  readonly imageBackOff?: Backoff;
  /**
   * Bound on `RunPodSandbox`, `CreateContainer` and `StartContainer` calls in flight at once,
   * across all pods (default: no bound). A runtime creating sandboxes and containers on a small
   * machine is CPU-bound and gets through them fastest a few at a time. Only these calls wait, in
   * the order they were made: image pulls, status reads and stops never do.
   */
  readonly maxConcurrentCreationCalls?: number;
  /** Mount a kubelet-managed /etc/hosts (pod IP and hostname, hostAliases) into containers. Default true. */
  readonly manageEtcHosts?: boolean;
  /** Bound on an httpGet lifecycle hook with no grace period to bound it. Default 2 minutes. */
  readonly httpHookTimeoutMs?: number;
  /**
   * RuntimeClasses by name: a pod's `runtimeClassName` picks the handler its sandbox runs with.
   * Without it a pod that names a RuntimeClass gets no sandbox ("not found").
   */
  readonly runtimeClassGetter?: RuntimeClassGetter;
  /** The host IDs pods with `hostUsers: false` get (default from 65536, 65536 per pod). */
  readonly userNamespaces?: Omit<UserNamespaceManagerOptions, 'podsDirectory'>;
}

/** A container of a pod spec with the list it belongs to. */
/** Only running containers, and every sandbox (upstream `ConvertPodStatusToRunningPod`). @public */
export function convertPodStatusToRunningPod(status: RuntimePodStatus): RuntimePod {
  return runtimePodFromStatus(status, (c) => c.state === 'running');
}

/**
 * The kubelet's generic runtime manager over CRI (upstream `kubeGenericRuntimeManager`):
 * computes what a pod needs and drives sandboxes, containers, images and hooks to get there.
 * @public
 */
export class KubeGenericRuntimeManager implements Runtime, CommandRunner {
  readonly #rs: RuntimeService;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #opts: KubeGenericRuntimeManagerOptions;
  readonly #images: ImageManager;
  readonly #podLogsRoot: string;
  readonly #rootDir: string;
  #runtimeName: string;
  readonly #owned: { close(): void }[] = [];
  /** Holds back creation calls beyond `maxConcurrentCreationCalls`; absent when unbounded. */
  readonly #creationCalls: PQueue | undefined;
  readonly #statusCache = new StatusCache();
  readonly #listing = new PodListing();
  /** What the container and sandbox functions get of this manager. */
  readonly #containers: ContainerContext;
  readonly #sandboxes: SandboxContext;
  readonly #userns: UserNamespaceManager;
  readonly #dns: DNSConfigurer;
  /** From the last Status: what each handler and the runtime can do (none read yet: nothing). */
  #runtimeHandlers: readonly RuntimeHandlerInfo[] = [];
  #features: RuntimeFeatures = { supplementalGroupsPolicy: false, userNamespacesHostNetwork: false };
  #statusRead = false;

  constructor(options: KubeGenericRuntimeManagerOptions) {
    this.#opts = options;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = options.logger ?? noopLogger;
    this.#recorder = options.recorder ?? noopEventRecorder;
    let rs = options.runtimeService;
    let is = options.imageService;
    if (!rs) {
      if (!options.endpoint)
        throw new TypeError('KubeGenericRuntimeManager needs runtimeService or endpoint');
      const client = new RuntimeServiceClient({ endpoint: options.endpoint });
      this.#owned.push(client);
      rs = client;
    }
    if (!is) {
      const endpoint = options.imageEndpoint ?? options.endpoint;
      if (!endpoint) throw new TypeError('KubeGenericRuntimeManager needs imageService or an endpoint');
      const client = new ImageServiceClient({ endpoint });
      this.#owned.push(client);
      is = client;
    }
    this.#rs = rs;
    const bound = options.maxConcurrentCreationCalls;
    if (bound !== undefined && !(Number.isInteger(bound) && bound >= 1)) {
      throw new RangeError(`maxConcurrentCreationCalls must be a positive integer, got ${bound}`);
    }
    this.#creationCalls = bound !== undefined ? new PQueue({ concurrency: bound }) : undefined;
    this.#runtimeName = options.runtimeName ?? '';
    this.#podLogsRoot = options.podLogsRootDirectory ?? defaultPodLogsRootDirectory;
    this.#rootDir = options.rootDirectory ?? '/var/lib/kubelet';
    this.#dns = new DNSConfigurer({
      ...(options.dns ?? {}),
      recorder: this.#recorder,
      logger: this.#logger.child({ component: 'dns' }),
      nodeName: options.nodeName ?? os.hostname(),
      nodeIPs: options.nodeIPs ?? [],
    });
    this.#userns = new UserNamespaceManager({
      ...(options.userNamespaces ?? {}),
      podsDirectory: path.join(this.#rootDir, 'pods'),
    });
    this.#images = new ImageManager({
      imageService: is,
      clock: this.#clock,
      recorder: this.#recorder,
      logger: this.#logger,
      ...(options.maxParallelImagePulls !== undefined
        ? { maxParallelImagePulls: options.maxParallelImagePulls }
        : {}),
      ...(options.imageBackOff ? { backOff: options.imageBackOff } : {}),
      ...(options.registryPullQPS !== undefined ? { registryPullQPS: options.registryPullQPS } : {}),
      ...(options.registryBurst !== undefined ? { registryBurst: options.registryBurst } : {}),
      ...(options.presentImageTtlMs !== undefined ? { presentImageTtlMs: options.presentImageTtlMs } : {}),
    });
    const hooks = new HandlerRunner({
      commandRunner: this,
      clock: this.#clock,
      ...(options.httpHookTimeoutMs !== undefined ? { httpTimeoutMs: options.httpHookTimeoutMs } : {}),
    });
    const creationCall = <T>(call: () => Promise<T>, signal?: AbortSignal) =>
      this.#creationCall(call, signal);
    this.#containers = {
      runtimeService: rs,
      clock: this.#clock,
      logger: this.#logger,
      recorder: this.#recorder,
      images: this.#images,
      hooks,
      runtimeName: () => this.#runtimeName,
      podLogsRootDirectory: this.#podLogsRoot,
      rootDirectory: this.#rootDir,
      // Read once: the machine's memory does not change under a running agent (upstream: MachineInfo).
      memoryCapacity: options.memoryCapacity ?? os.totalmem(),
      options,
      creationCall,
      forgetContainerStatus: (id) => this.#statusCache.forgetContainer(id),
      getPodStatus: (o) => this.getPodStatus(o),
    };
    this.#sandboxes = {
      runtimeService: rs,
      runtimeClassGetter: options.runtimeClassGetter,
      generatePodSandboxConfig: (pod, attempt) => this.generatePodSandboxConfig(pod, attempt),
      ensureRuntimeStatus: async (signal) => {
        if (!this.#statusRead) await this.status(signal).catch(() => undefined);
      },
      creationCall,
    };
  }

  /** The image pull backoff (keyed `<podUID>_<image>`). */
  get imageBackOff(): Backoff {
    return this.#images.backOff;
  }

  /**
   * Warns when the host's resolv.conf cannot serve pods (upstream CheckLimitsForResolvConf, run
   * once as the kubelet's sync loop starts): a CheckLimitsForResolvConf event on the node.
   */
  checkLimitsForResolvConf(): void {
    this.#dns.checkLimitsForResolvConf();
  }

  /** Closes the CRI clients this manager dialled itself. */
  close(): void {
    for (const c of this.#owned) c.close();
  }

  type(): string {
    return this.#runtimeName;
  }

  async #ensureRuntimeName(signal?: AbortSignal): Promise<string> {
    if (!this.#runtimeName) this.#runtimeName = (await this.#rs.version({}, { signal })).runtimeName;
    return this.#runtimeName;
  }

  async version(signal?: AbortSignal): Promise<RuntimeVersion> {
    const v = await this.#rs.version({}, { signal });
    if (!this.#runtimeName) this.#runtimeName = v.runtimeName;
    return {
      runtimeName: v.runtimeName,
      runtimeVersion: v.runtimeVersion,
      runtimeApiVersion: v.runtimeApiVersion,
    };
  }

  async status(signal?: AbortSignal): Promise<readonly RuntimeCondition[]> {
    const res = await this.#rs.status({}, { signal });
    // Upstream keeps these in its runtime state at each runtime status check (updateRuntimeUp).
    this.#runtimeHandlers = res.runtimeHandlers.map((h) => ({
      name: h.name,
      supportsUserNamespaces: h.features?.userNamespaces === true,
      supportsRecursiveReadOnlyMounts: h.features?.recursiveReadOnlyMounts === true,
    }));
    this.#features = {
      supplementalGroupsPolicy: res.features?.supplementalGroupsPolicy === true,
      userNamespacesHostNetwork: res.features?.userNamespacesHostNetwork === true,
    };
    this.#statusRead = true;
    return (res.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
    }));
  }

  /** The runtime's handlers as its last Status reported them (an old runtime reports none). */
  runtimeHandlers(): readonly RuntimeHandlerInfo[] {
    return this.#runtimeHandlers;
  }

  /** The runtime's features as its last Status reported them (all false before one). */
  runtimeFeatures(): RuntimeFeatures {
    return this.#features;
  }

  // ---- CommandRunner ------------------------------------------------------------------------

  async runInContainer(o: RunInContainerOptions): Promise<ExecResult> {
    const timeout = o.timeoutMs > 0 ? Math.ceil(o.timeoutMs / 1000) : 0;
    try {
      const res = await this.#rs.execSync(
        { containerId: o.containerId, cmd: [...o.cmd], timeout },
        { signal: o.signal, ...(o.timeoutMs > 0 ? { timeoutMs: o.timeoutMs + 2000 } : {}) },
      );
      return { stdout: res.stdout, stderr: res.stderr, exitCode: res.exitCode };
    } catch (err) {
      if (CriError.is(err, 'DeadlineExceeded'))
        throw new CommandTimeoutError(`command timed out: ${err.details}`);
      throw err;
    }
  }

  // ---- status -------------------------------------------------------------------------------

  #rememberSandboxStatus(s: CriPodSandboxStatus): RuntimeSandboxStatus {
    const status = toSandboxStatus(s);
    this.#statusCache.rememberSandbox(s.id, s.state, status);
    return status;
  }

  async #rememberContainerStatus(
    s: CriContainerStatus,
    runtimeName: string,
  ): Promise<RuntimeContainerStatus> {
    const status = await toContainerStatus(s, runtimeName);
    this.#statusCache.rememberContainer(s.id, s.state, status);
    return status;
  }

  async getPodStatus(o: RuntimeGetPodStatusOptions): Promise<RuntimePodStatus> {
    const signal = o.signal;
    const runtimeName = await this.#ensureRuntimeName(signal);
    const timestamp = this.#clock.now();
    const selector = { [podUIDLabel]: o.uid };
    const [sandboxList, containerList] = await Promise.all([
      this.#rs.listPodSandbox({ filter: { labelSelector: selector } }, { signal }),
      this.#rs.listContainers({ filter: { labelSelector: selector } }, { signal }),
    ]);
    const sandboxItems = [...sandboxList.items].sort((a, b) => b.createdAt - a.createdAt);
    this.#statusCache.pruneOfPod(o.uid, [
      ...sandboxItems.map((x) => x.id),
      ...containerList.containers.map((x) => x.id),
    ]);
    // Status calls in parallel; an object removed since the list is skipped.
    const notFoundAsUndefined = (err: unknown) => {
      if (CriError.is(err, 'NotFound')) return undefined;
      throw err;
    };
    const listedSandboxes = await Promise.all(
      sandboxItems.map((item) => {
        const cached = this.#statusCache.sandboxStatus(item.id, item.state);
        if (cached) return cached;
        return this.#rs
          .podSandboxStatus({ podSandboxId: item.id }, { signal })
          .then(
            (res) => (res.status ? this.#rememberSandboxStatus(res.status) : undefined),
            notFoundAsUndefined,
          );
      }),
    );
    const sandboxStatuses = listedSandboxes.filter((s): s is RuntimeSandboxStatus => s !== undefined);
    // Only the newest listed sandbox gives the pod its IPs: if it went away since the listing,
    // an older ready one does not stand in for it.
    const ips = podIPsOf(listedSandboxes[0]);
    const containerStatuses = (
      await Promise.all(
        containerList.containers.map((c) => {
          const cached = this.#statusCache.containerStatus(c.id, c.state);
          if (cached) return cached;
          return this.#rs
            .containerStatus({ containerId: c.id }, { signal })
            .then(
              (res) => (res.status ? this.#rememberContainerStatus(res.status, runtimeName) : undefined),
              notFoundAsUndefined,
            );
        }),
      )
    ).filter((s): s is RuntimeContainerStatus => s !== undefined);
    containerStatuses.sort((a, b) => b.createdAt - a.createdAt);
    return {
      id: o.uid,
      name: o.name,
      namespace: o.namespace,
      ips,
      containerStatuses,
      sandboxStatuses,
      timestamp,
    };
  }

  async getPods(all: boolean, signal?: AbortSignal): Promise<RuntimePod[]> {
    const runtimeName = await this.#ensureRuntimeName(signal);
    const [sandboxes, containers] = await Promise.all([
      this.#rs.listPodSandbox(all ? {} : { filter: { state: { state: PodSandboxState.SANDBOX_READY } } }, {
        signal,
      }),
      this.#rs.listContainers(all ? {} : { filter: { state: { state: ContainerState.CONTAINER_RUNNING } } }, {
        signal,
      }),
    ]);
    const pods = this.#listing.build(all, sandboxes.items, containers.containers, runtimeName);
    if (all) this.#statusCache.prune(sandboxes.items, containers.containers, pods.length);
    return pods;
  }

  // ---- syncPod ------------------------------------------------------------------------------

  /** The actions the next sync would take for this pod (computePodActions with this manager's probes). */
  computePodActions(pod: Pod, podStatus: RuntimePodStatus): PodActions {
    return computePodActions(pod, podStatus, {
      ...(this.#opts.livenessManager ? { liveness: this.#opts.livenessManager } : {}),
      ...(this.#opts.startupManager ? { startup: this.#opts.startupManager } : {}),
    });
  }

  #cgroupParent(pod: Pod): string {
    const c = this.#opts.cgroupParent;
    return typeof c === 'function' ? c(pod) : (c ?? '');
  }

  /** The sandbox config this manager would use for the pod (exported for tools and benchmarks). */
  generatePodSandboxConfig(pod: Pod, attempt: number): PartialMessage<PodSandboxConfig> {
    // Upstream NamespacesForPod: the RuntimeClass's handler decides whether a user namespace
    // can be had, so an unknown RuntimeClass fails the config.
    const handler = lookupRuntimeHandler(this.#opts.runtimeClassGetter, pod.spec?.runtimeClassName);
    const usernsOptions = this.#userns.getOrCreateUserNamespaceMappings(pod, handler, this.#runtimeHandlers);
    return generatePodSandboxConfig(pod, attempt, {
      ...(this.#opts.dns ?? {}),
      dnsConfigurer: this.#dns,
      podLogsRootDirectory: this.#podLogsRoot,
      cgroupParent: this.#cgroupParent(pod),
      usernsOptions,
    });
  }

  async syncPod(o: RuntimeSyncPodOptions): Promise<PodSyncResult> {
    const { pod, podStatus, signal } = o;
    const results: SyncResult[] = [];
    // What the sync made, as the runtime reported it afterwards: with the status the sync was
    // given, the pod's status after a sync that only made things (so its PLEG need not list it).
    let newSandbox: RuntimeSandboxStatus | undefined;
    const newContainers: RuntimeContainerStatus[] = [];
    const done = (syncError?: Error): PodSyncResult => {
      if (syncError) return { syncResults: results, syncError };
      const composed = composable && results.length > 0 && results.every((r) => r.error === undefined);
      if (!composed) return { syncResults: results };
      return {
        syncResults: results,
        podStatus: composePodStatus(podStatus, newSandbox, newContainers, this.#clock.now()),
      };
    };
    await this.#ensureRuntimeName(signal);

    // Step 1: what to do.
    const actions = this.computePodActions(pod, podStatus);
    // A sync that stops or removes something leaves statuses it did not read: not composable.
    // A new pod's "kill" stops nothing (nothing of it runs); a pod that had containers may lose
    // its init containers to the purge that comes with a new sandbox.
    const stopsSomething =
      actions.containersToKill.size > 0 ||
      (actions.killPod &&
        (podStatus.containerStatuses.length > 0 ||
          podStatus.sandboxStatuses.some((x) => x.state === 'ready')));
    let composable = !stopsSomething;
    this.#logger.debug(
      { pod: podDesc(pod), actions: { ...actions, containersToKill: [...actions.containersToKill.keys()] } },
      'computePodActions',
    );
    if (actions.createSandbox && actions.sandboxId) {
      this.#recorder.event(
        podEventReference(pod),
        'Normal',
        'SandboxChanged',
        'Pod sandbox changed, it will be killed and re-created.',
      );
    }

    // Step 2: kill the pod, or just the unwanted containers.
    if (actions.killPod) {
      const kill = await this.#killPodWithSyncResult(
        pod,
        convertPodStatusToRunningPod(podStatus),
        undefined,
        signal,
      );
      results.push(...kill.syncResults);
      if (kill.syncResults.some((r) => r.error !== undefined)) return done();
      if (actions.createSandbox) await purgeInitContainers(this.#containers, pod, podStatus, signal);
    } else {
      for (const [, info] of actions.containersToKill) {
        try {
          await this.killContainer({
            pod,
            containerId: info.containerId,
            containerName: info.name,
            message: info.message,
            reason: info.reason,
            ...(signal ? { signal } : {}),
          });
          results.push({ action: 'KillContainer', target: info.name, message: '' });
        } catch (err) {
          results.push({
            action: 'KillContainer',
            target: info.name,
            error: 'KillContainerError',
            message: goErrorString(err),
          });
          this.#logger.error(
            { pod: podDesc(pod), container: info.name, err: errorMessage(err) },
            'killContainer for pod failed',
          );
          return done();
        }
      }
    }

    // Step 3: keep only the newest instance of each init container.
    if ((await pruneInitContainersBeforeStart(this.#containers, pod, podStatus, signal)) > 0)
      composable = false;
    // Step 3b: instances that were made but never started, with a newer one beside them.
    if ((await removeSupersededNeverStarted(this.#containers, podStatus, signal)) > 0) composable = false;

    // Step 4: the sandbox, and the config that image pulls and containers are created with
    // (built on first use: most syncs start nothing).
    let sandboxConfig: PartialMessage<PodSandboxConfig> | undefined;
    let podSandboxId = actions.sandboxId;
    let podIPs = [...podStatus.ips];
    if (actions.createSandbox) {
      const target = podDesc(pod);
      try {
        const created = await createPodSandbox(this.#sandboxes, pod, actions.attempt, signal);
        podSandboxId = created.podSandboxId;
        // The containers are created with the same config (upstream builds it a second time).
        sandboxConfig = created.config;
        results.push({ action: 'CreatePodSandbox', target, message: '' });
      } catch (err) {
        // A pod that is being deleted needs no sandbox: its failure is no error and has no event.
        if (pod.metadata?.deletionTimestamp) {
          results.push({ action: 'CreatePodSandbox', target, message: '' });
          composable = false;
          return done();
        }
        const message = errorMessage(err);
        results.push({ action: 'CreatePodSandbox', target, error: 'CreatePodSandboxError', message });
        const cause = err instanceof SandboxCreationError ? err.cause : err;
        this.#recorder.event(
          podEventReference(pod),
          'Warning',
          'FailedCreatePodSandBox',
          `Failed to create pod sandbox: ${goErrorString(cause)}`,
        );
        return done();
      }
      try {
        const res = await this.#rs.podSandboxStatus({ podSandboxId }, { signal });
        if (!res.status) return done(new Error('pod sandbox status is nil'));
        const status = this.#rememberSandboxStatus(res.status);
        newSandbox = status;
        if (!pod.spec?.hostNetwork) podIPs = [...status.ips];
      } catch (err) {
        this.#recorder.event(
          podEventReference(pod),
          'Warning',
          'FailedStatusPodSandBox',
          `Unable to get pod sandbox status: ${goErrorString(err)}`,
        );
        return done(err instanceof Error ? err : new Error(String(err)));
      }
    }

    // Step 5: start what is to be started.

    // A sandbox config that cannot be built starts nothing: the sync ends with that failure.
    let configFailed = false;
    const start = async (spec: StartSpec): Promise<boolean> => {
      const name = spec.container.name;
      // A cancelled sync starts nothing more.
      if (signal?.aborted) return false;
      const backoff = this.#doBackOff(pod, spec, podStatus, o.backOff);
      if (backoff) {
        results.push({ action: 'StartContainer', target: name, error: 'CrashLoopBackOff', message: backoff });
        return false;
      }
      if (!sandboxConfig) {
        try {
          sandboxConfig = this.generatePodSandboxConfig(pod, actions.attempt);
        } catch (err) {
          configFailed = true;
          results.push({
            action: 'ConfigPodSandbox',
            target: podSandboxId,
            error: 'ConfigPodSandboxError',
            message: `GeneratePodSandboxConfig for pod ${JSON.stringify(podDesc(pod))} failed: ${goErrorString(err)}`,
          });
          return false;
        }
      }
      // A container made but never started (the runtime went away before or while it was
      // started) is removed and made again: it never ran, so this is no restart, and nothing of
      // it stays beside the new one. Upstream leaves it and counts a restart.
      const last = findContainerStatusByName(podStatus, name);
      if (last?.state === 'created') {
        try {
          await removeContainer(this.#containers, last.id.id, signal);
          composable = false;
        } catch (err) {
          results.push({
            action: 'StartContainer',
            target: name,
            error: 'RunContainerError',
            message: `failed to remove container ${JSON.stringify(last.id.id)} that never started: ${goErrorString(err)}`,
          });
          return false;
        }
      }
      try {
        const containerId = await startContainer(this.#containers, {
          podSandboxId,
          sandboxConfig,
          spec,
          pod,
          podStatus,
          pullSecrets: o.pullSecrets,
          podIPs,
          signal,
        });
        results.push({ action: 'StartContainer', target: name, message: '' });
        if (composable) {
          const status = await this.#readStartedContainerStatus(containerId, signal);
          if (status) newContainers.push(status);
          else composable = false;
        }
        return true;
      } catch (err) {
        const code = err instanceof KubeRuntimeError ? err.code : 'RunContainerError';
        results.push({ action: 'StartContainer', target: name, error: code, message: errorMessage(err) });
        return false;
      }
    };

    // Step 6: ephemeral containers, errors ignored.
    for (const idx of actions.ephemeralContainersToStart) {
      const c = pod.spec?.ephemeralContainers?.[idx];
      if (c) await start({ container: c as Container, type: 'ephemeral' });
      if (configFailed) return done();
    }
    // Step 7: init containers, in order; a failed regular init container ends the sync.
    for (const idx of actions.initContainersToStart) {
      const c = pod.spec?.initContainers?.[idx];
      if (!c) continue;
      const ok = await start({ container: c, type: 'init' });
      if (configFailed || (!ok && !isRestartableInitContainer(c))) return done();
    }
    // Step 8: main containers, each attempted.
    for (const idx of actions.containersToStart) {
      const c = pod.spec?.containers?.[idx];
      if (c) await start({ container: c, type: 'container' });
      if (configFailed) return done();
    }
    return done();
  }

  /** The crash-loop message while the container waits out its backoff; undefined to go ahead. */
  #doBackOff(pod: Pod, spec: StartSpec, podStatus: RuntimePodStatus, backOff: Backoff): string | undefined {
    const c = spec.container;
    const last = podStatus.containerStatuses.find((s) => s.name === c.name && s.state === 'exited');
    if (!last) return undefined;
    const key = getStableKey(pod, c);
    if (backOff.isInBackOffSince(key, last.finishedAt)) {
      this.#recorder.event(
        containerRef(pod, spec),
        'Warning',
        'BackOff',
        `Back-off restarting failed container ${c.name} in pod ${podDesc(pod)}`,
      );
      return `back-off ${formatGoDuration(backOff.get(key))} restarting failed container=${c.name} pod=${podDesc(pod)}`;
    }
    backOff.next(key, last.finishedAt);
    return undefined;
  }

  /** Runs a creation call within `maxConcurrentCreationCalls`. */
  #creationCall<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const queue = this.#creationCalls;
    if (!queue) return call();
    return queue.add(call, signal ? { signal } : {});
  }

  /** A just-started container's status (remembered like a listed one's); undefined if unreadable. */
  async #readStartedContainerStatus(
    containerId: string,
    signal?: AbortSignal,
  ): Promise<RuntimeContainerStatus | undefined> {
    try {
      const res = await this.#rs.containerStatus({ containerId }, { signal });
      return res.status ? await this.#rememberContainerStatus(res.status, this.#runtimeName) : undefined;
    } catch (err) {
      // The PLEG reads the pod instead.
      this.#logger.debug({ containerId, err: errorMessage(err) }, 'status of a started container');
      return undefined;
    }
  }

  // ---- kill ---------------------------------------------------------------------------------

  /**
   * Stops one container: runs its preStop hook within the grace period, then StopContainer with
   * what is left (at least 2 s). Upstream `killContainer`.
   */
  killContainer(o: KillContainerOptions): Promise<void> {
    return killContainer(this.#containers, o);
  }

  async #killPodWithSyncResult(
    pod: Pod | undefined,
    runningPod: RuntimePod,
    gracePeriodOverride: number | undefined,
    signal?: AbortSignal,
  ): Promise<PodSyncResult> {
    const results = await killContainersWithSyncResult(
      this.#containers,
      pod,
      runningPod,
      gracePeriodOverride,
      signal,
    );
    // Sandboxes are only stopped here; garbage collection removes them.
    const errors: string[] = [];
    for (const s of runningPod.sandboxes) {
      try {
        await this.#rs.stopPodSandbox({ podSandboxId: s.id.id }, { signal });
      } catch (err) {
        if (!CriError.is(err, 'NotFound')) errors.push(goErrorString(err));
      }
    }
    results.push(
      errors.length > 0
        ? {
            action: 'KillPodSandbox',
            target: runningPod.id,
            error: 'KillPodSandboxError',
            message: errors.join('; '),
          }
        : { action: 'KillPodSandbox', target: runningPod.id, message: '' },
    );
    return { syncResults: results };
  }

  async killPod(o: RuntimeKillPodOptions): Promise<PodSyncResult> {
    await this.#ensureRuntimeName(o.signal);
    return this.#killPodWithSyncResult(o.pod, o.runningPod, o.gracePeriodOverride, o.signal);
  }

  // ---- GC -----------------------------------------------------------------------------------

  async garbageCollect(o: RuntimeGarbageCollectOptions): Promise<void> {
    await containerGC({
      runtimeService: this.#rs,
      clock: this.#clock,
      logger: this.#logger,
      podLogsRootDirectory: this.#podLogsRoot,
      podStateProvider: this.#opts.podStateProvider ?? {
        shouldPodContentBeRemoved: () => false,
        shouldPodRuntimeBeRemoved: () => false,
      },
      removeContainer: (id, signal) => removeContainer(this.#containers, id, signal),
      // With no pod: its preStop hook and grace period come from its own labels.
      killContainer: (id, name, signal) =>
        this.killContainer({
          containerId: { type: this.#runtimeName, id },
          containerName: name,
          message: 'Container is in unknown state, try killing it before removal',
          reason: 'Unknown',
          ...(signal ? { signal } : {}),
        }),
      ...o,
    });
  }
}

/**
 * The pod's status after a sync that only made things: the status the sync was given, with the
 * new sandbox and containers first (newest first, as `getPodStatus` orders them).
 */
function composePodStatus(
  before: RuntimePodStatus,
  newSandbox: RuntimeSandboxStatus | undefined,
  newContainers: readonly RuntimeContainerStatus[],
  timestamp: number,
): RuntimePodStatus {
  const sandboxStatuses = newSandbox
    ? [newSandbox, ...before.sandboxStatuses].sort((a, b) => b.createdAt - a.createdAt)
    : before.sandboxStatuses;
  const containerStatuses = [...newContainers, ...before.containerStatuses].sort(
    (a, b) => b.createdAt - a.createdAt,
  );
  return {
    ...before,
    ips: podIPsOf(sandboxStatuses[0]),
    sandboxStatuses,
    containerStatuses,
    timestamp,
  };
}
