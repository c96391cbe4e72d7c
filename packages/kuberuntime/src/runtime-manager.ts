import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  Backoff,
  type Clock,
  type CommandRunner,
  CommandTimeoutError,
  type Container,
  type ContainerID,
  type EventObjectRef,
  type EventRecorder,
  type ExecResult,
  formatContainerID,
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
  type RuntimeContainer,
  type RuntimeContainerState,
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
  NamespaceMode,
  type PartialMessage,
  type PodSandboxConfig,
  PodSandboxState,
  RuntimeServiceClient,
} from '@kubelet-kit/cri';
import PQueue from 'p-queue';
import { generateContainerConfig } from './container-config.js';
import { errorMessage, KubeRuntimeError } from './errors.js';
import { containerGC, type GCPodStateProvider } from './gc.js';
import { findContainerStatusByName, formatGoDuration, getStableKey } from './helpers.js';
import { ImageManager, type ImageService } from './images.js';
import {
  type ContainerType,
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  podUIDLabel,
} from './labels.js';
import { HandlerRunner } from './lifecycle.js';
import {
  calcRestartCountByLogDir,
  maxContainerTerminationMessageLength,
  readLastStringFromContainerLogs,
  readTail,
} from './logs.js';
import { type ContainerKillReason, computePodActions, type PodActions } from './pod-actions.js';
import { lookupRuntimeHandler } from './runtime-class.js';
import {
  buildContainerLogsDirectory,
  type DNSOptions,
  defaultPodLogsRootDirectory,
  generatePodSandboxConfig,
} from './sandbox-config.js';
import { TerminationOrdering } from './termination-order.js';
import {
  type RuntimeHandlerInfo,
  UserNamespaceManager,
  type UserNamespaceManagerOptions,
} from './user-namespaces.js';

/** What the runtime implements, from its last Status (CRI `RuntimeFeatures`). */
export interface RuntimeFeatures {
  readonly supplementalGroupsPolicy: boolean;
  readonly userNamespacesHostNetwork: boolean;
}

/** The RuntimeService calls kuberuntime makes (a `RuntimeServiceClient` of `@kubelet-kit/cri` fits). */
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

/** Upstream `minimumGracePeriodInSeconds`: a container always gets 2 s to stop. */
export const minimumGracePeriodInSeconds = 2;
/** The kubelet's crash-loop backoff: 10 s doubling to 300 s, reset after 10 minutes of running. */
export const crashLoopBackOffInitialMs = 10_000;
export const crashLoopBackOffMaxMs = 300_000;
export const crashLoopBackOffResetMs = 600_000;

/** A crash-loop backoff with the kubelet's settings (initial and max can be changed, as the kubelet's config). */
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

/** Options of {@link KubeGenericRuntimeManager}. */
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
  readonly dns?: DNSOptions;
  /** Machine memory for the burstable OOM score; default `os.totalmem()`. */
  readonly memoryCapacity?: number;
  readonly cpuCFSQuota?: boolean;
  readonly cpuCFSQuotaPeriod?: number;
  /** Parallel image pulls; 1 (default) pulls serially. */
  readonly maxParallelImagePulls?: number;
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
export interface StartSpec {
  readonly container: Container;
  readonly type: ContainerType;
}

function nsToMs(ns: number): number {
  return Math.floor(ns / 1e6);
}

function stateOf(state: ContainerState): RuntimeContainerState {
  switch (state) {
    case ContainerState.CONTAINER_CREATED:
      return 'created';
    case ContainerState.CONTAINER_RUNNING:
      return 'running';
    case ContainerState.CONTAINER_EXITED:
      return 'exited';
    default:
      return 'unknown';
  }
}

function podDesc(pod: Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

/** The container's spec in the pod, with which list it came from. */
export function getContainerSpec(pod: Pod, name: string): StartSpec | undefined {
  const init = pod.spec?.initContainers?.find((c) => c.name === name);
  if (init) return { container: init, type: 'init' };
  const main = pod.spec?.containers?.find((c) => c.name === name);
  if (main) return { container: main, type: 'container' };
  const eph = pod.spec?.ephemeralContainers?.find((c) => c.name === name);
  if (eph) return { container: eph as Container, type: 'ephemeral' };
  return undefined;
}

function fieldPath(type: ContainerType, name: string): string {
  const list =
    type === 'init' ? 'initContainers' : type === 'ephemeral' ? 'ephemeralContainers' : 'containers';
  return `spec.${list}{${name}}`;
}

/** Only running containers, and every sandbox (upstream `ConvertPodStatusToRunningPod`). */
export function convertPodStatusToRunningPod(status: RuntimePodStatus): RuntimePod {
  return runtimePodFromStatus(status, (c) => c.state === 'running');
}

/**
 * The kubelet's generic runtime manager over CRI (upstream `kubeGenericRuntimeManager`):
 * computes what a pod needs and drives sandboxes, containers, images and hooks to get there.
 */
export class KubeGenericRuntimeManager implements Runtime, CommandRunner {
  readonly #rs: RuntimeService;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #opts: KubeGenericRuntimeManagerOptions;
  readonly #images: ImageManager;
  readonly #hooks: HandlerRunner;
  readonly #podLogsRoot: string;
  readonly #rootDir: string;
  /** Read once: the machine's memory does not change under a running agent (upstream: MachineInfo). */
  readonly #memoryCapacity: number;
  #runtimeName: string;
  readonly #owned: { close(): void }[] = [];
  /** Holds back creation calls beyond `maxConcurrentCreationCalls`; absent when unbounded. */
  readonly #creationCalls: PQueue | undefined;
  /**
   * The last status read of each sandbox and container, with the state it was read in. Nothing
   * in a status changes without its state changing (IPs, namespaces, start and finish times,
   * exit codes, mounts are fixed once the state is), so a status whose listed state is unchanged
   * is not read again. Entries go when a full listing no longer shows the object.
   */
  readonly #sandboxStatusCache = new Map<string, { state: number; status: RuntimeSandboxStatus }>();
  readonly #containerStatusCache = new Map<string, { state: number; status: RuntimeContainerStatus }>();
  /** The sandbox and container IDs each pod's last status read listed (to prune the caches per pod). */
  readonly #statusIdsByPod = new Map<string, readonly string[]>();
  readonly #userns: UserNamespaceManager;
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
    this.#memoryCapacity = options.memoryCapacity ?? os.totalmem();
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
      ...(options.presentImageTtlMs !== undefined ? { presentImageTtlMs: options.presentImageTtlMs } : {}),
    });
    this.#hooks = new HandlerRunner({
      commandRunner: this,
      clock: this.#clock,
      ...(options.httpHookTimeoutMs !== undefined ? { httpTimeoutMs: options.httpHookTimeoutMs } : {}),
    });
  }

  /** The image pull backoff (keyed `<podUID>_<image>`). */
  get imageBackOff(): Backoff {
    return this.#images.backOff;
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

  /** Forgets the statuses of the pod's sandboxes and containers its own listing no longer shows. */
  #pruneStatusCachesOfPod(uid: string, listed: readonly string[]): void {
    const before = this.#statusIdsByPod.get(uid);
    if (before) {
      const now = new Set(listed);
      for (const id of before) {
        if (now.has(id)) continue;
        this.#sandboxStatusCache.delete(id);
        this.#containerStatusCache.delete(id);
      }
    }
    if (listed.length > 0) this.#statusIdsByPod.set(uid, listed);
    else this.#statusIdsByPod.delete(uid);
  }

  /** Forgets the statuses of sandboxes and containers a full listing no longer shows. */
  #pruneStatusCaches(
    sandboxes: readonly { id: string; labels: Record<string, string> }[],
    containers: readonly { id: string; labels: Record<string, string> }[],
  ): void {
    if (this.#sandboxStatusCache.size > 0) {
      const listed = new Set(sandboxes.map((x) => x.id));
      for (const id of this.#sandboxStatusCache.keys())
        if (!listed.has(id)) this.#sandboxStatusCache.delete(id);
    }
    if (this.#containerStatusCache.size > 0) {
      const listed = new Set(containers.map((x) => x.id));
      for (const id of this.#containerStatusCache.keys())
        if (!listed.has(id)) this.#containerStatusCache.delete(id);
    }
    if (this.#statusIdsByPod.size > 0) {
      const pods = new Set<string>();
      for (const x of [...sandboxes, ...containers]) {
        const uid = x.labels[podUIDLabel];
        if (uid) pods.add(uid);
      }
      for (const uid of this.#statusIdsByPod.keys()) if (!pods.has(uid)) this.#statusIdsByPod.delete(uid);
    }
  }

  #rememberSandboxStatus(s: CriPodSandboxStatus): RuntimeSandboxStatus {
    const status = this.#toSandboxStatus(s);
    this.#sandboxStatusCache.set(s.id, { state: s.state, status });
    return status;
  }

  async #rememberContainerStatus(
    s: CriContainerStatus,
    runtimeName: string,
  ): Promise<RuntimeContainerStatus> {
    const status = await this.#toContainerStatus(s, runtimeName);
    // An unknown state may still fill in; every other is settled until it changes.
    if (s.state !== ContainerState.CONTAINER_UNKNOWN)
      this.#containerStatusCache.set(s.id, { state: s.state, status });
    return status;
  }

  #toSandboxStatus(s: CriPodSandboxStatus): RuntimeSandboxStatus {
    const hostNetwork = s.linux?.namespaces?.options?.network === NamespaceMode.NODE;
    const ips = sandboxIPs(s);
    return {
      id: s.id,
      name: s.metadata?.name ?? '',
      namespace: s.metadata?.namespace ?? '',
      uid: s.metadata?.uid ?? '',
      attempt: s.metadata?.attempt ?? 0,
      state: s.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready',
      createdAt: nsToMs(s.createdAt),
      ips: hostNetwork ? [] : ips,
      hostNetwork,
      labels: s.labels,
      annotations: s.annotations,
    };
  }

  async #toContainerStatus(s: CriContainerStatus, runtimeName: string): Promise<RuntimeContainerStatus> {
    const labeled = getContainerInfoFromLabels(s.labels);
    const annotated = getContainerInfoFromAnnotations(s.annotations);
    const state = stateOf(s.state);
    let message = state === 'exited' ? s.message : '';
    const exitCode = state === 'exited' ? s.exitCode : 0;
    const reason = state === 'exited' ? s.reason : '';
    if (state === 'exited') {
      const fallbackToLogs =
        annotated.terminationMessagePolicy === 'FallbackToLogsOnError' &&
        exitCode !== 0 &&
        reason !== 'ContainerCannotRun';
      let tMessage = '';
      const mount = annotated.terminationMessagePath
        ? s.mounts.find((m) => m.containerPath === annotated.terminationMessagePath)
        : undefined;
      if (mount) tMessage = await readTail(mount.hostPath, maxContainerTerminationMessageLength);
      if (!tMessage && fallbackToLogs && s.logPath)
        tMessage = await readLastStringFromContainerLogs(s.logPath);
      if (tMessage) message = message ? `${message}: ${tMessage}` : tMessage;
    }
    return {
      id: { type: runtimeName, id: s.id },
      name: labeled.containerName || s.metadata?.name || '',
      state,
      createdAt: nsToMs(s.createdAt),
      startedAt: state === 'created' ? 0 : nsToMs(s.startedAt),
      finishedAt: state === 'exited' ? nsToMs(s.finishedAt) : 0,
      exitCode,
      image: s.image?.userSpecifiedImage || s.image?.image || '',
      // The runtime's image ID when it reports one (CRI v1.30+), else the digested ref.
      imageId: s.imageId || s.imageRef,
      imageRef: s.imageRef,
      hash: annotated.hash,
      restartCount: annotated.restartCount,
      reason,
      message,
      ...(s.user?.linux
        ? {
            user: {
              linux: {
                uid: s.user.linux.uid,
                gid: s.user.linux.gid,
                supplementalGroups: [...s.user.linux.supplementalGroups],
              },
            },
          }
        : {}),
    };
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
    this.#pruneStatusCachesOfPod(o.uid, [
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
        const cached = this.#sandboxStatusCache.get(item.id);
        if (cached && cached.state === item.state) return cached.status;
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
          const cached = this.#containerStatusCache.get(c.id);
          if (cached && cached.state === c.state) return cached.status;
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
    if (all) this.#pruneStatusCaches(sandboxes.items, containers.containers);
    interface Building {
      id: string;
      name: string;
      namespace: string;
      createdAt: number;
      containers: RuntimeContainer[];
      sandboxes: RuntimeContainer[];
    }
    const pods = new Map<string, Building>();
    const podOf = (uid: string, name: string, namespace: string): Building => {
      let p = pods.get(uid);
      if (!p) {
        p = { id: uid, name, namespace, createdAt: 0, containers: [], sandboxes: [] };
        pods.set(uid, p);
      }
      return p;
    };
    for (const s of [...sandboxes.items].sort((a, b) => b.createdAt - a.createdAt)) {
      const info = getContainerInfoFromLabels(s.labels);
      const uid = info.podUid || s.metadata?.uid || '';
      if (!uid) continue;
      const p = podOf(uid, s.metadata?.name ?? info.podName, s.metadata?.namespace ?? info.podNamespace);
      p.createdAt = Math.max(p.createdAt, nsToMs(s.createdAt));
      p.sandboxes.push({
        id: { type: runtimeName, id: s.id },
        name: s.metadata?.name ?? '',
        image: '',
        imageId: '',
        hash: '',
        state: s.state === PodSandboxState.SANDBOX_READY ? 'running' : 'exited',
      });
    }
    for (const c of [...containers.containers].sort((a, b) => b.createdAt - a.createdAt)) {
      const info = getContainerInfoFromLabels(c.labels);
      if (!info.podUid) continue;
      const p = podOf(info.podUid, info.podName, info.podNamespace);
      p.containers.push({
        id: { type: runtimeName, id: c.id },
        name: info.containerName,
        image: c.image?.userSpecifiedImage || c.image?.image || '',
        imageId: c.imageId || c.imageRef,
        hash: getContainerInfoFromAnnotations(c.annotations).hash,
        state: stateOf(c.state),
      });
    }
    return [...pods.values()];
  }

  // ---- syncPod ------------------------------------------------------------------------------

  /** The actions the next sync would take for this pod (computePodActions with this manager's probes). */
  computePodActions(pod: Pod, podStatus: RuntimePodStatus): PodActions {
    return computePodActions(pod, podStatus, {
      ...(this.#opts.livenessManager ? { liveness: this.#opts.livenessManager } : {}),
      ...(this.#opts.startupManager ? { startup: this.#opts.startupManager } : {}),
    });
  }

  #containerRef(pod: Pod, spec: StartSpec): EventObjectRef {
    return podEventReference(pod, fieldPath(spec.type, spec.container.name));
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
      if (actions.createSandbox) await this.#purgeInitContainers(pod, podStatus, signal);
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
    if ((await this.#pruneInitContainersBeforeStart(pod, podStatus, signal)) > 0) composable = false;
    // Step 3b: instances that were made but never started, with a newer one beside them.
    if ((await this.#removeSupersededNeverStarted(podStatus, signal)) > 0) composable = false;

    // Step 4: the sandbox, and the config that image pulls and containers are created with
    // (built on first use: most syncs start nothing).
    let sandboxConfig: PartialMessage<PodSandboxConfig> | undefined;
    let podSandboxId = actions.sandboxId;
    let podIPs = [...podStatus.ips];
    if (actions.createSandbox) {
      const target = podDesc(pod);
      try {
        const created = await this.#createPodSandbox(pod, actions.attempt, signal);
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
          await this.#removeContainer(last.id.id, signal);
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
        const containerId = await this.#startContainer(
          podSandboxId,
          sandboxConfig,
          spec,
          pod,
          podStatus,
          o.pullSecrets,
          podIPs,
          signal,
        );
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
        this.#containerRef(pod, spec),
        'Warning',
        'BackOff',
        `Back-off restarting failed container ${c.name} in pod ${podDesc(pod)}`,
      );
      return `back-off ${formatGoDuration(backOff.get(key))} restarting failed container=${c.name} pod=${podDesc(pod)}`;
    }
    backOff.next(key, last.finishedAt);
    return undefined;
  }

  async #createPodSandbox(
    pod: Pod,
    attempt: number,
    signal?: AbortSignal,
  ): Promise<{ podSandboxId: string; config: PartialMessage<PodSandboxConfig> }> {
    // Each failing step says what failed, with the pod, as upstream's messages do.
    const quotedPod = JSON.stringify(podDesc(pod));
    // A user namespace needs the handlers' features: read them if no status check has yet.
    if (pod.spec?.hostUsers === false && !this.#statusRead) {
      await this.status(signal).catch(() => undefined);
    }
    let config: PartialMessage<PodSandboxConfig>;
    let runtimeHandler: string;
    try {
      config = this.generatePodSandboxConfig(pod, attempt);
      runtimeHandler = lookupRuntimeHandler(this.#opts.runtimeClassGetter, pod.spec?.runtimeClassName);
    } catch (err) {
      throw new SandboxCreationError(`Failed to generate sandbox config for pod ${quotedPod}`, err);
    }
    try {
      // Synchronous, as the container's small writes (see generateContainerConfig).
      if (config.logDirectory) fsSync.mkdirSync(config.logDirectory, { recursive: true, mode: 0o755 });
    } catch (err) {
      throw new SandboxCreationError(`Failed to create log directory for pod ${quotedPod}`, err);
    }
    try {
      const res = await this.#creationCall(
        () => this.#rs.runPodSandbox({ config, runtimeHandler }, { signal }),
        signal,
      );
      return { podSandboxId: res.podSandboxId, config };
    } catch (err) {
      throw new SandboxCreationError(`Failed to create sandbox for pod ${quotedPod}`, err);
    }
  }

  /** Runs a creation call within `maxConcurrentCreationCalls`. */
  #creationCall<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const queue = this.#creationCalls;
    if (!queue) return call();
    return queue.add(call, signal ? { signal } : {});
  }

  #podDir(pod: Pod): string {
    return path.join(this.#rootDir, 'pods', pod.metadata?.uid ?? '');
  }

  async #startContainer(
    podSandboxId: string,
    sandboxConfig: PartialMessage<PodSandboxConfig>,
    spec: StartSpec,
    pod: Pod,
    podStatus: RuntimePodStatus,
    pullSecrets: RuntimeSyncPodOptions['pullSecrets'],
    podIPs: readonly string[],
    signal?: AbortSignal,
  ): Promise<string> {
    const container = spec.container;
    const ref = this.#containerRef(pod, spec);
    // Step 1: the image.
    let image: Awaited<ReturnType<ImageManager['ensureImageExists']>>;
    try {
      image = await this.#images.ensureImageExists({
        pod,
        container,
        pullSecrets,
        sandboxConfig,
        objectRef: ref,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      // The reason alone ("Error: ErrImagePull"): the image manager's own event has the detail.
      const reason = err instanceof KubeRuntimeError ? err.code : errorMessage(err);
      this.#recorder.event(ref, 'Warning', 'Failed', `Error: ${reason}`);
      throw err;
    }
    // Step 2: the restart count, from the last instance or else from the log directory.
    const m = pod.metadata ?? {};
    const last = findContainerStatusByName(podStatus, container.name);
    // One that never started was removed for this one, which takes its count (see syncPod).
    const restartCount = last
      ? last.restartCount + (last.state === 'created' ? 0 : 1)
      : await calcRestartCountByLogDir(
          buildContainerLogsDirectory(
            this.#podLogsRoot,
            m.namespace ?? '',
            m.name ?? '',
            m.uid ?? '',
            container.name,
          ),
        );
    // Step 3: the config.
    let config: Awaited<ReturnType<typeof generateContainerConfig>>['config'];
    try {
      const generated = await generateContainerConfig(pod, container, {
        containerType: spec.type,
        restartCount,
        imageRef: image.imageRef,
        imageUser: { username: image.username, ...(image.uid !== undefined ? { uid: image.uid } : {}) },
        env: {
          nodeName: this.#opts.nodeName ?? os.hostname(),
          // Host-network pods have the node's addresses.
          podIP: (pod.spec?.hostNetwork && podIPs.length === 0 ? this.#opts.nodeIPs?.[0] : podIPs[0]) ?? '',
          podIPs: pod.spec?.hostNetwork && podIPs.length === 0 ? (this.#opts.nodeIPs ?? []) : podIPs,
          hostIPs: this.#opts.nodeIPs ?? [],
          ...(this.#opts.objectGetter ? { objectGetter: this.#opts.objectGetter } : {}),
          ...(signal ? { signal } : {}),
        },
        volumes: this.#opts.volumeProvider?.getMountedVolumesForPod(m.uid ?? '') ?? new Map(),
        ...(this.#opts.subpather ? { subpather: this.#opts.subpather } : {}),
        logger: this.#logger,
        podDir: this.#podDir(pod),
        ...(sandboxConfig.linux?.securityContext?.namespaceOptions?.usernsOptions
          ? { usernsOptions: sandboxConfig.linux.securityContext.namespaceOptions.usernsOptions }
          : {}),
        ...(this.#opts.manageEtcHosts === false
          ? {}
          : {
              etcHosts: {
                podDir: this.#podDir(pod),
                ...(this.#opts.dns?.clusterDomain ? { clusterDomain: this.#opts.dns.clusterDomain } : {}),
              },
            }),
        podLogsRootDirectory: this.#podLogsRoot,
        memoryCapacity: this.#memoryCapacity,
        resources: {
          ...(this.#opts.cpuCFSQuota !== undefined ? { cpuCFSQuota: this.#opts.cpuCFSQuota } : {}),
          ...(this.#opts.cpuCFSQuotaPeriod !== undefined
            ? { cpuCFSQuotaPeriod: this.#opts.cpuCFSQuotaPeriod }
            : {}),
        },
      });
      config = generated.config;
    } catch (err) {
      const message = errorMessage(err);
      this.#recorder.event(ref, 'Warning', 'Failed', `Error: ${message}`);
      // Whatever failed (a config error, an env reference, a mount), the reason is the same.
      throw new KubeRuntimeError('CreateContainerConfigError', message, { cause: err });
    }
    // Step 4: create.
    let containerId: string;
    try {
      containerId = (
        await this.#creationCall(
          () => this.#rs.createContainer({ podSandboxId, config, sandboxConfig }, { signal }),
          signal,
        )
      ).containerId;
    } catch (err) {
      // The image may be gone since it was last seen: ask the runtime on the next start.
      this.#images.forgetImage(container.image ?? '');
      this.#recorder.event(ref, 'Warning', 'Failed', `Error: ${errorMessage(err)}`);
      throw new KubeRuntimeError('CreateContainerError', errorMessage(err), { cause: err });
    }
    this.#recorder.event(ref, 'Normal', 'Created', `Created container: ${container.name}`);
    // Step 5: start.
    try {
      await this.#creationCall(() => this.#rs.startContainer({ containerId }, { signal }), signal);
    } catch (err) {
      // The container's name for its ID: events that differ only in an ID do not aggregate.
      const message = errorMessage(err).replaceAll(containerId, container.name);
      this.#recorder.event(ref, 'Warning', 'Failed', `Error: ${message}`);
      throw new KubeRuntimeError('RunContainerError', errorMessage(err), { cause: err });
    }
    this.#recorder.event(ref, 'Normal', 'Started', `Started container ${container.name}`);
    // Step 6: postStart; its failure kills the container.
    const postStart = container.lifecycle?.postStart;
    if (postStart) {
      const cid: ContainerID = { type: this.#runtimeName, id: containerId };
      try {
        await this.#hooks.run(
          { containerId: cid, pod, container, podIP: podIPs[0] ?? '', ...(signal ? { signal } : {}) },
          postStart,
        );
      } catch (err) {
        // The hook's own message stays out of the event: it may hold secrets.
        this.#recorder.event(ref, 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
        try {
          await this.killContainer({
            pod,
            containerId: cid,
            containerName: container.name,
            message: 'FailedPostStartHook',
            reason: 'FailedPostStartHook',
            ...(signal ? { signal } : {}),
          });
        } catch (killErr) {
          this.#logger.error(
            { container: container.name, err: errorMessage(killErr) },
            'failed to kill container after postStart failure',
          );
        }
        throw new KubeRuntimeError('PostStartHookError', errorMessage(err), { cause: err });
      }
    }
    return containerId;
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

  /** Restores the pod and container fields killContainer needs from the container's labels. */
  async #restoreSpecsFromContainerLabels(
    containerId: ContainerID,
    signal?: AbortSignal,
  ): Promise<{ pod: Pod; container: Container }> {
    const res = await this.#rs.containerStatus({ containerId: containerId.id }, { signal });
    const s = res.status;
    if (!s) throw new Error(`container status is nil for ${formatContainerID(containerId)}`);
    const l = getContainerInfoFromLabels(s.labels);
    const a = getContainerInfoFromAnnotations(s.annotations);
    const pod: Pod = {
      metadata: {
        name: l.podName,
        namespace: l.podNamespace,
        uid: l.podUid,
        ...(a.podDeletionGracePeriod !== undefined
          ? { deletionGracePeriodSeconds: a.podDeletionGracePeriod }
          : {}),
      },
      spec: {
        containers: [],
        ...(a.podTerminationGracePeriod !== undefined
          ? { terminationGracePeriodSeconds: a.podTerminationGracePeriod }
          : {}),
      },
    };
    const container: Container = {
      name: l.containerName,
      ports: a.containerPorts,
      terminationMessagePath: a.terminationMessagePath,
      ...(a.preStopHandler ? { lifecycle: { preStop: a.preStopHandler } } : {}),
    };
    return { pod, container };
  }

  /**
   * Stops one container: runs its preStop hook within the grace period, then StopContainer with
   * what is left (at least 2 s). Upstream `killContainer`.
   */
  async killContainer(o: {
    pod?: Pod;
    containerId: ContainerID;
    containerName: string;
    message?: string;
    reason?: ContainerKillReason;
    gracePeriodOverride?: number;
    ordering?: TerminationOrdering;
    signal?: AbortSignal;
  }): Promise<void> {
    let pod = o.pod;
    let container: Container;
    let type: ContainerType = 'container';
    const spec = pod ? getContainerSpec(pod, o.containerName) : undefined;
    if (pod && spec) {
      container = spec.container;
      type = spec.type;
    } else if (pod) {
      // Not in the spec (any more): its hooks come from its own annotations, the grace from the pod.
      ({ container } = await this.#restoreSpecsFromContainerLabels(o.containerId, o.signal));
    } else {
      ({ pod, container } = await this.#restoreSpecsFromContainerLabels(o.containerId, o.signal));
    }
    let grace = setTerminationGracePeriod(pod, container, o.reason ?? '');
    const ref = podEventReference(pod, fieldPath(type, container.name));
    this.#recorder.event(ref, 'Normal', 'Killing', o.message || `Stopping container ${container.name}`);
    if (o.gracePeriodOverride !== undefined) grace = o.gracePeriodOverride;

    const preStop = container.lifecycle?.preStop;
    if (preStop && grace > 0)
      grace -= await this.#executePreStopHook(pod, container, ref, o.containerId, preStop, grace, o.signal);
    if (o.ordering && grace > 0)
      grace -= Math.trunc(await o.ordering.waitForTurn(container.name, grace, o.signal));
    // A minimal window to stop, so nothing is SIGKILLed needlessly.
    if (grace < minimumGracePeriodInSeconds) grace = minimumGracePeriodInSeconds;
    try {
      await this.#rs.stopContainer({ containerId: o.containerId.id, timeout: grace }, { signal: o.signal });
    } catch (err) {
      if (!CriError.is(err, 'NotFound')) throw err;
    }
    o.ordering?.containerTerminated(container.name);
  }

  /** Runs preStop for at most `grace` seconds; resolves with the whole seconds it took. */
  async #executePreStopHook(
    pod: Pod,
    container: Container,
    ref: EventObjectRef,
    containerId: ContainerID,
    handler: NonNullable<NonNullable<Container['lifecycle']>['preStop']>,
    grace: number,
    signal?: AbortSignal,
  ): Promise<number> {
    const start = this.#clock.now();
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const hook = this.#podIPForHook(pod, handler, controller.signal)
      .then((podIP) =>
        this.#hooks.run({ containerId, pod, container, podIP, signal: controller.signal }, handler),
      )
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        this.#recorder.event(ref, 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
        this.#logger.warn({ container: container.name, err: errorMessage(err) }, 'preStop hook failed');
      });
    const timer = this.#clock.sleep(grace * 1000, controller.signal).catch(() => undefined);
    try {
      await Promise.race([hook, timer]);
    } finally {
      // The hook is abandoned once the grace period is over, as upstream's goroutine is.
      controller.abort();
      signal?.removeEventListener('abort', onAbort);
    }
    return Math.trunc((this.#clock.now() - start) / 1000);
  }

  /** The pod's IP for an httpGet hook without a host (upstream reads the pod status for it). */
  async #podIPForHook(
    pod: Pod,
    handler: NonNullable<Container['lifecycle']>['preStop'],
    signal: AbortSignal,
  ): Promise<string> {
    if (!handler?.httpGet || handler.httpGet.host) return '';
    const m = pod.metadata ?? {};
    const status = await this.getPodStatus({
      uid: m.uid ?? '',
      name: m.name ?? '',
      namespace: m.namespace ?? '',
      signal,
    });
    return status.ips[0] ?? '';
  }

  async #killContainersWithSyncResult(
    pod: Pod | undefined,
    runningPod: RuntimePod,
    gracePeriodOverride: number | undefined,
    signal?: AbortSignal,
  ): Promise<SyncResult[]> {
    const ordering =
      pod && TerminationOrdering.needed(pod)
        ? new TerminationOrdering(
            pod,
            runningPod.containers.map((c) => c.name),
            this.#clock,
          )
        : undefined;
    return Promise.all(
      runningPod.containers.map(async (c): Promise<SyncResult> => {
        try {
          await this.killContainer({
            ...(pod ? { pod } : {}),
            containerId: c.id,
            containerName: c.name,
            ...(gracePeriodOverride !== undefined ? { gracePeriodOverride } : {}),
            ...(ordering ? { ordering } : {}),
            ...(signal ? { signal } : {}),
          });
          return { action: 'KillContainer', target: c.name, message: '' };
        } catch (err) {
          ordering?.containerTerminated(c.name);
          return {
            action: 'KillContainer',
            target: c.name,
            error: 'KillContainerError',
            message: goErrorString(err),
          };
        }
      }),
    );
  }

  async #killPodWithSyncResult(
    pod: Pod | undefined,
    runningPod: RuntimePod,
    gracePeriodOverride: number | undefined,
    signal?: AbortSignal,
  ): Promise<PodSyncResult> {
    const results = await this.#killContainersWithSyncResult(pod, runningPod, gracePeriodOverride, signal);
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

  async #removeContainer(id: string, signal?: AbortSignal): Promise<void> {
    // Logs first: a container is only removed once its logs are gone, so a retry finds both.
    try {
      const res = await this.#rs.containerStatus({ containerId: id }, { signal });
      if (res.status?.logPath) await fs.rm(res.status.logPath, { force: true });
    } catch (err) {
      if (CriError.is(err, 'NotFound')) return;
      throw err;
    }
    await this.#rs.removeContainer({ containerId: id }, { signal });
    this.#containerStatusCache.delete(id);
  }

  /** Removes every instance of every init container (upstream `purgeInitContainers`). */
  async #purgeInitContainers(pod: Pod, podStatus: RuntimePodStatus, signal?: AbortSignal): Promise<void> {
    const names = new Set((pod.spec?.initContainers ?? []).map((c) => c.name));
    for (const s of podStatus.containerStatuses) {
      if (!names.has(s.name)) continue;
      await this.#removeContainer(s.id.id, signal).catch((err: unknown) =>
        this.#logger.warn({ container: s.name, err: errorMessage(err) }, 'failed to remove init container'),
      );
    }
  }

  /** Keeps the newest exited (or unknown) instance of each init container (upstream `pruneInitContainersBeforeStart`). */
  async #pruneInitContainersBeforeStart(
    pod: Pod,
    podStatus: RuntimePodStatus,
    signal?: AbortSignal,
  ): Promise<number> {
    let removed = 0;
    for (const c of pod.spec?.initContainers ?? []) {
      let count = 0;
      for (const s of podStatus.containerStatuses) {
        if (s.name !== c.name || (s.state !== 'exited' && s.state !== 'unknown')) continue;
        count++;
        if (count === 1) continue;
        removed++;
        await this.#removeContainer(s.id.id, signal).catch((err: unknown) =>
          this.#logger.warn({ container: s.name, err: errorMessage(err) }, 'failed to prune init container'),
        );
      }
    }
    return removed;
  }

  /**
   * Removes each container instance that was made but never started while a newer instance of
   * the same name exists. A CreateContainer whose reply was lost with the runtime (it restarted)
   * leaves such an instance, which the sync that replaced it could not see; GC would keep it as
   * the one dead instance per container for good. Not in upstream (see the README).
   */
  async #removeSupersededNeverStarted(podStatus: RuntimePodStatus, signal?: AbortSignal): Promise<number> {
    const newest = new Set<string>();
    let removed = 0;
    // containerStatuses are newest first.
    for (const s of podStatus.containerStatuses) {
      if (!newest.has(s.name)) {
        newest.add(s.name);
        continue;
      }
      if (s.state !== 'created') continue;
      removed++;
      await this.#removeContainer(s.id.id, signal).catch((err: unknown) =>
        this.#logger.warn(
          { container: s.name, id: s.id.id, err: errorMessage(err) },
          'failed to remove a container that never started',
        ),
      );
    }
    return removed;
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
      removeContainer: (id, signal) => this.#removeContainer(id, signal),
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

/** The grace period of a kill, in seconds (upstream `setTerminationGracePeriod`). */
export function setTerminationGracePeriod(
  pod: Pod,
  container: Container,
  reason: ContainerKillReason,
): number {
  const deletion = pod.metadata?.deletionGracePeriodSeconds;
  if (deletion !== undefined && deletion !== null) return deletion;
  const spec = pod.spec?.terminationGracePeriodSeconds;
  if (spec !== undefined && spec !== null) {
    const probe =
      reason === 'StartupProbe'
        ? container.startupProbe
        : reason === 'LivenessProbe'
          ? container.livenessProbe
          : undefined;
    const probeGrace = probe?.terminationGracePeriodSeconds;
    if (probeGrace !== undefined && probeGrace !== null) return probeGrace;
    return spec;
  }
  return minimumGracePeriodInSeconds;
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

/** A pod's IPs: its newest sandbox's, while that sandbox is ready. */
function podIPsOf(newest: RuntimeSandboxStatus | undefined): readonly string[] {
  return newest?.state === 'ready' ? newest.ips : [];
}

/** A sandbox's IPs (upstream `determinePodSandboxIPs`): the primary if any, then the others; none if one is not an IP. */
function sandboxIPs(s: CriPodSandboxStatus): string[] {
  const network = s.network;
  if (!network) return [];
  const ips = network.ip ? [network.ip] : [];
  for (const a of network.additionalIps) ips.push(a.ip);
  return ips.every((ip) => isIP(ip) !== 0) ? ips : [];
}

/** A failed step of sandbox creation: `message` is upstream's "Failed to … for pod …: <error>". */
class SandboxCreationError extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what}: ${goErrorString(cause)}`, { cause });
    this.name = 'SandboxCreationError';
  }
}

/** An error as Go's `%v` prints it: a CRI error as `rpc error: code = … desc = …`. */
function goErrorString(err: unknown): string {
  if (CriError.is(err)) {
    const code = err.code === 'Cancelled' ? 'Canceled' : err.code;
    return `rpc error: code = ${code} desc = ${err.details}`;
  }
  return errorMessage(err);
}
