import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  type ContainerConfig,
  type ContainerEventResponse,
  ContainerEventType,
  type ContainerMetadata,
  ContainerState,
  type ContainerStats,
  type ContainerStatus,
  type Container as CriContainer,
  type ImageSpec,
  type LinuxContainerResources,
  NamespaceMode,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxMetadata,
  PodSandboxState,
  type PodSandboxStats,
  type PodSandboxStatus,
  type RuntimeServiceTypes,
} from '../generated/types.js';
import { type FakeImageService, imageRefOf, imageSpecOf } from './fake-image-service.js';
import { type HandlerMap, StatusError } from './status-error.js';

/** One ExecSync call as a handler sees it. @public */
export interface ExecCall {
  containerId: string;
  cmd: string[];
  /** Timeout in seconds the caller asked for (0: none). */
  timeout: number;
}

/** What an exec handler answers. @public */
export interface ExecResult {
  stdout?: string | Uint8Array;
  stderr?: string | Uint8Array;
  /** Default 0. */
  exitCode?: number;
}

/**
 * Selects ExecSync calls: a string equal to the command joined with spaces, a RegExp tested
 * against it, or a predicate.
 * @public
 */
export type ExecMatcher = string | RegExp | ((call: ExecCall) => boolean);

/** Answers a matched ExecSync call (may be async; a slow answer trips the call's timeout). @public */
export type ExecHandler = (call: ExecCall) => ExecResult | Promise<ExecResult>;

/** How a container exits in {@link InMemoryCriServer.exitContainer}. @public */
export interface ExitOptions {
  /** Default `Completed` for exit code 0, else `Error` (containerd's reasons). */
  reason?: string;
  message?: string;
}

/**
 * A container the fake runtime has just started, as {@link InMemoryCriServer.onContainerStarted}
 * listeners see it: what was asked of it (command, args, labels, annotations) and its sandbox's
 * metadata, labels and annotations (the pod's, as the kubelet passes them).
 * @public
 */
export interface StartedContainer {
  readonly id: string;
  readonly podSandboxId: string;
  /** The container's name and attempt. */
  readonly name: string;
  readonly attempt: number;
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly sandbox: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
  };
}

/** Runtime conditions reported by Status. @public */
export interface RuntimeConditionState {
  status: boolean;
  reason?: string;
  message?: string;
}

/**
 * A runtime handler as Status reports it in `runtime_handlers` (containerd 2 and CRI-O do;
 * containerd 1.6 reports none). `""` is the default handler. @public
 */
export interface FakeRuntimeHandler {
  name: string;
  userNamespaces?: boolean;
  recursiveReadOnlyMounts?: boolean;
}

/** Status's `features`. @public */
export interface FakeRuntimeFeatures {
  supplementalGroupsPolicy?: boolean;
  userNamespacesHostNetwork?: boolean;
}

/**
 * The first process's identity, as a runtime with SupplementalGroupsPolicy reports it: the
 * configured uid and gid (0 without), the gid and the configured groups (the image adds none).
 */
function containerUser(config: ContainerConfig): ContainerStatus['user'] {
  const sc = config.linux?.securityContext;
  const gid = sc?.runAsGroup?.value ?? 0;
  return {
    linux: {
      uid: sc?.runAsUser?.value ?? 0,
      gid,
      supplementalGroups: [...new Set([gid, ...(sc?.supplementalGroups ?? [])])],
    },
  };
}

interface SandboxRecord {
  id: string;
  name: string;
  metadata: PodSandboxMetadata;
  config: PodSandboxConfig;
  state: PodSandboxState;
  createdAt: number;
  ip: string;
  runtimeHandler: string;
}

interface ContainerRecord {
  id: string;
  name: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  config: ContainerConfig;
  image: ImageSpec;
  imageRef: string;
  imageId: string;
  resources: LinuxContainerResources;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  logPath: string;
  usage: FakeContainerUsage;
}

/**
 * A container's resource usage as the fake runtime reports it in ContainerStats; counters are
 * cumulative, as a real runtime's are. Unset fields are reported as zero.
 * @public
 */
export interface FakeContainerUsage {
  readonly cpuUsageCoreNanoSeconds?: number;
  readonly memoryWorkingSetBytes?: number;
  readonly memoryUsageBytes?: number;
  readonly memoryAvailableBytes?: number;
  readonly rssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
  readonly writableLayerBytes?: number;
  readonly writableLayerInodes?: number;
}

/** A sandbox's own usage beyond its containers' (network, process count) in PodSandboxStats. @public */
export interface FakePodSandboxUsage {
  readonly network?: {
    readonly name: string;
    readonly rxBytes: number;
    readonly rxErrors?: number;
    readonly txBytes: number;
    readonly txErrors?: number;
  };
  readonly processCount?: number;
}

interface ExecRegistration {
  matcher: ExecMatcher;
  handler: ExecHandler;
}

/** Options of the fake runtime (a subset of the server's options). */
export interface FakeRuntimeOptions {
  now: () => number;
  images: FakeImageService;
  runtimeName: string;
  runtimeVersion: string;
  podSubnet: string;
  stopExitCode: number;
}

// What containerd reports for a container created without resources.
const ZERO_LINUX_RESOURCES: LinuxContainerResources = {
  cpuPeriod: 0,
  cpuQuota: 0,
  cpuShares: 0,
  memoryLimitInBytes: 0,
  oomScoreAdj: 0,
  cpusetCpus: '',
  cpusetMems: '',
  hugepageLimits: [],
  unified: {},
  memorySwapLimitInBytes: 0,
};

/** Exit code of a container killed without grace (StopPodSandbox, forced removal): SIGKILL. */
const KILLED_EXIT_CODE = 137;

const CONTAINER_EVENT = ContainerEventType;
const TERMINATION_MESSAGE_PATH_ANNOTATION = 'io.kubernetes.container.terminationMessagePath';

function newId(): string {
  return randomBytes(32).toString('hex');
}

/** The label the kubelet filters a pod's sandboxes and containers by. */
const podUidLabel = 'io.kubernetes.pod.uid';

/** IDs grouped by a key, so that filtered lists do not scan every object. */
class IdIndex {
  readonly #ids = new Map<string, Set<string>>();
  add(key: string | undefined, id: string): void {
    if (key === undefined) return;
    const set = this.#ids.get(key);
    if (set) set.add(id);
    else this.#ids.set(key, new Set([id]));
  }
  delete(key: string | undefined, id: string): void {
    if (key === undefined) return;
    const set = this.#ids.get(key);
    if (!set) return;
    set.delete(id);
    if (set.size === 0) this.#ids.delete(key);
  }
  get(key: string): ReadonlySet<string> {
    return this.#ids.get(key) ?? new Set();
  }
}

/** The objects of `all` a filter can match: all of them, or those of one indexed key. */
function candidates<T>(all: ReadonlyMap<string, T>, narrowed: ReadonlySet<string> | undefined): Iterable<T> {
  if (!narrowed) return all.values();
  const out: T[] = [];
  for (const id of narrowed) {
    const x = all.get(id);
    if (x) out.push(x);
  }
  return out;
}

function matchesLabels(labels: Record<string, string>, selector: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function stateName(state: ContainerState): string {
  return Object.entries(ContainerState).find(([, v]) => v === state)?.[0] ?? String(state);
}

/**
 * One CRI Exec, Attach or PortForward call the fake answered: the token ends the URL it gave.
 * @public
 */
export interface StreamingCall {
  readonly method: 'Exec' | 'Attach' | 'PortForward';
  readonly token: string;
  /** The container (Exec, Attach) or sandbox (PortForward) ID, resolved from a prefix. */
  readonly id: string;
  readonly cmd: readonly string[];
  readonly tty: boolean;
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly ports: readonly number[];
}

/**
 * Sandboxes and containers in memory with containerd's (1.6) observable semantics: name
 * reservation, state checks, idempotent stop/remove, and the errors kubelet code reacts to.
 */
export class FakeRuntimeService {
  readonly #sandboxes = new Map<string, SandboxRecord>();
  readonly #containers = new Map<string, ContainerRecord>();
  readonly #sandboxesByPod = new IdIndex();
  readonly #containersByPod = new IdIndex();
  readonly #containersBySandbox = new IdIndex();
  readonly #names = new Map<string, string>();
  readonly #exec: ExecRegistration[] = [];
  /** Base of the URLs Exec/Attach/PortForward answer (a test's fake streaming server). */
  streamingUrl = 'http://127.0.0.1:10010';
  readonly streamingCalls: StreamingCall[] = [];
  #nextToken = 1;
  readonly #subscribers = new Set<(event: ContainerEventResponse) => void>();
  readonly #startListeners = new Set<(container: StartedContainer) => void>();
  readonly #opts: FakeRuntimeOptions;
  readonly #sandboxUsage = new Map<string, FakePodSandboxUsage>();
  #nextIp = 2;
  conditions: { RuntimeReady: RuntimeConditionState; NetworkReady: RuntimeConditionState } = {
    RuntimeReady: { status: true },
    NetworkReady: { status: true },
  };
  containerEvents = false;
  podCidr = '';
  /** Reported by Status; when not empty, RunPodSandbox refuses a handler not among them. */
  runtimeHandlers: FakeRuntimeHandler[] = [];
  /** Reported by Status; undefined: no `features` at all (an old runtime). */
  features: FakeRuntimeFeatures | undefined;

  constructor(opts: FakeRuntimeOptions) {
    this.#opts = opts;
  }

  #nowNs(): number {
    return Math.round(this.#opts.now() * 1e6);
  }

  #allocateIp(): string {
    // A /16 from the configured subnet's first two octets; addresses are never reused.
    const [a = '10', b = '88'] = this.#opts.podSubnet.split('.');
    const n = this.#nextIp++;
    return `${a}.${b}.${Math.floor(n / 256) % 256}.${n % 256}`;
  }

  #sandbox(id: string): SandboxRecord {
    const sandbox = this.#sandboxes.get(id) ?? this.#byPrefix(this.#sandboxes, id);
    if (!sandbox) {
      throw new StatusError('NotFound', `an error occurred when try to find sandbox "${id}": not found`);
    }
    return sandbox;
  }

  #container(id: string): ContainerRecord {
    const container = this.#containers.get(id) ?? this.#byPrefix(this.#containers, id);
    if (!container) {
      throw new StatusError('NotFound', `an error occurred when try to find container "${id}": not found`);
    }
    return container;
  }

  // containerd resolves ids by unique prefix (truncindex).
  #byPrefix<T>(map: Map<string, T>, prefix: string): T | undefined {
    if (!prefix) return undefined;
    const hits = [...map.entries()].filter(([id]) => id.startsWith(prefix));
    return hits.length === 1 ? hits[0]?.[1] : undefined;
  }

  #reserve(name: string, id: string, kind: 'sandbox' | 'container'): void {
    const owner = this.#names.get(name);
    if (owner !== undefined) {
      throw new StatusError(
        'Unknown',
        `failed to reserve ${kind} name "${name}": name "${name}" is reserved for "${owner}"`,
      );
    }
    this.#names.set(name, id);
  }

  #sandboxStatus(s: SandboxRecord): PodSandboxStatus {
    return {
      id: s.id,
      metadata: s.metadata,
      state: s.state,
      createdAt: s.createdAt,
      network: { ip: s.ip, additionalIps: [] },
      linux: {
        namespaces: {
          options: s.config.linux?.securityContext?.namespaceOptions ?? {
            network: NamespaceMode.POD,
            pid: NamespaceMode.POD,
            ipc: NamespaceMode.POD,
            targetId: '',
          },
        },
      },
      labels: s.config.labels,
      annotations: s.config.annotations,
      runtimeHandler: s.runtimeHandler,
    };
  }

  #sandboxItem(s: SandboxRecord): PodSandbox {
    return {
      id: s.id,
      metadata: s.metadata,
      state: s.state,
      createdAt: s.createdAt,
      labels: s.config.labels,
      annotations: s.config.annotations,
      runtimeHandler: s.runtimeHandler,
    };
  }

  #containerStatus(c: ContainerRecord): ContainerStatus {
    return {
      id: c.id,
      metadata: c.metadata,
      state: c.state,
      createdAt: c.createdAt,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      exitCode: c.exitCode,
      image: c.image,
      imageRef: c.imageRef,
      reason: c.reason,
      message: c.message,
      labels: c.config.labels,
      annotations: c.config.annotations,
      mounts: c.config.mounts,
      logPath: c.logPath,
      imageId: c.imageId,
      resources: { linux: c.resources },
      stopSignal: c.config.stopSignal,
      ...(this.features?.supplementalGroupsPolicy ? { user: containerUser(c.config) } : {}),
    };
  }

  #containerItem(c: ContainerRecord): CriContainer {
    return {
      id: c.id,
      podSandboxId: c.podSandboxId,
      metadata: c.metadata,
      image: c.image,
      imageRef: c.imageRef,
      state: c.state,
      createdAt: c.createdAt,
      labels: c.config.labels,
      annotations: c.config.annotations,
      imageId: c.imageId,
    };
  }

  #emit(c: ContainerRecord, type: ContainerEventType): void {
    if (this.#subscribers.size === 0) return;
    const sandbox = this.#sandboxes.get(c.podSandboxId);
    const event: ContainerEventResponse = {
      containerId: c.id,
      containerEventType: type,
      createdAt: this.#nowNs(),
      ...(sandbox ? { podSandboxStatus: this.#sandboxStatus(sandbox) } : {}),
      containersStatuses: [...this.#containers.values()]
        .filter((x) => x.podSandboxId === c.podSandboxId)
        .map((x) => this.#containerStatus(x)),
    };
    for (const subscriber of this.#subscribers) subscriber(event);
  }

  #exit(c: ContainerRecord, exitCode: number, options: ExitOptions = {}): void {
    c.state = ContainerState.CONTAINER_EXITED;
    c.finishedAt = this.#nowNs();
    c.exitCode = exitCode;
    c.reason = options.reason ?? (exitCode === 0 ? 'Completed' : 'Error');
    c.message = options.message ?? '';
    this.#emit(c, CONTAINER_EVENT.CONTAINER_STOPPED_EVENT);
  }

  #remove(c: ContainerRecord): void {
    if (c.state === ContainerState.CONTAINER_RUNNING) this.#exit(c, KILLED_EXIT_CODE);
    this.#containers.delete(c.id);
    this.#containersByPod.delete(c.config.labels[podUidLabel], c.id);
    this.#containersBySandbox.delete(c.podSandboxId, c.id);
    this.#names.delete(c.name);
    this.#emit(c, CONTAINER_EVENT.CONTAINER_DELETED_EVENT);
  }

  #runningForStream(id: string, what: string): ContainerRecord {
    const c = this.#container(id);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw new StatusError('FailedPrecondition', `container ${c.id} is not running, cannot ${what}`);
    }
    return c;
  }

  #streamingCall(
    method: StreamingCall['method'],
    id: string,
    cmd: readonly string[],
    flags: { tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean },
    ports: readonly number[],
  ): string {
    const token = `t${this.#nextToken++}`;
    const { tty, stdin, stdout, stderr } = flags;
    this.streamingCalls.push({
      method,
      token,
      id,
      cmd: [...cmd],
      tty,
      stdin,
      stdout,
      stderr,
      ports: [...ports],
    });
    const path = method === 'PortForward' ? 'portforward' : method.toLowerCase();
    return `${this.streamingUrl}/${path}/${token}`;
  }

  // ---- test controls ----

  onExec(matcher: ExecMatcher, handler: ExecHandler): () => void {
    const registration = { matcher, handler };
    this.#exec.unshift(registration);
    return () => {
      const i = this.#exec.indexOf(registration);
      if (i >= 0) this.#exec.splice(i, 1);
    };
  }

  exitContainer(id: string, exitCode: number, options?: ExitOptions): void {
    const c = this.#container(id);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw new Error(`container ${id} is ${stateName(c.state)}, not running`);
    }
    this.#exit(c, exitCode, options);
  }

  setTerminationMessage(id: string, text: string): string {
    const c = this.#container(id);
    const target = c.config.annotations[TERMINATION_MESSAGE_PATH_ANNOTATION] ?? '/dev/termination-log';
    const mount = c.config.mounts.find((m) => m.containerPath === target);
    if (!mount?.hostPath)
      throw new Error(`container ${id} has no mount for its termination message path ${target}`);
    fs.mkdirSync(path.dirname(mount.hostPath), { recursive: true });
    fs.writeFileSync(mount.hostPath, text);
    return mount.hostPath;
  }

  writeLog(id: string, stream: 'stdout' | 'stderr', text: string): string {
    const c = this.#container(id);
    if (!c.logPath) throw new Error(`container ${id} has no log path`);
    const ts = new Date(this.#opts.now()).toISOString();
    const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
    fs.mkdirSync(path.dirname(c.logPath), { recursive: true });
    fs.appendFileSync(c.logPath, lines.map((l) => `${ts} ${stream} F ${l}\n`).join(''));
    return c.logPath;
  }

  setContainerUsage(id: string, usage: FakeContainerUsage): void {
    this.#container(id).usage = { ...usage };
  }

  setPodSandboxUsage(id: string, usage: FakePodSandboxUsage): void {
    this.#sandbox(id);
    this.#sandboxUsage.set(id, { ...usage });
  }

  #containerStats(c: ContainerRecord): ContainerStats {
    const ts = this.#nowNs();
    const u = c.usage;
    return {
      attributes: {
        id: c.id,
        metadata: c.metadata,
        labels: c.config.labels,
        annotations: c.config.annotations,
      },
      cpu: { timestamp: ts, usageCoreNanoSeconds: { value: u.cpuUsageCoreNanoSeconds ?? 0 } },
      memory: {
        timestamp: ts,
        workingSetBytes: { value: u.memoryWorkingSetBytes ?? 0 },
        availableBytes: { value: u.memoryAvailableBytes ?? 0 },
        usageBytes: { value: u.memoryUsageBytes ?? u.memoryWorkingSetBytes ?? 0 },
        rssBytes: { value: u.rssBytes ?? 0 },
        pageFaults: { value: u.pageFaults ?? 0 },
        majorPageFaults: { value: u.majorPageFaults ?? 0 },
      },
      writableLayer: {
        timestamp: ts,
        fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
        usedBytes: { value: u.writableLayerBytes ?? 0 },
        inodesUsed: { value: u.writableLayerInodes ?? 0 },
      },
    };
  }

  // containerd sums its containers' cgroups into the sandbox's: so does the fake.
  #podSandboxStats(s: SandboxRecord): PodSandboxStats {
    const ts = this.#nowNs();
    const containers = [...candidates(this.#containers, this.#containersBySandbox.get(s.id))]
      .filter((c) => c.state === ContainerState.CONTAINER_RUNNING)
      .map((c) => this.#containerStats(c));
    const sum = (f: (c: ContainerStats) => number | undefined) =>
      containers.reduce((n, c) => n + (f(c) ?? 0), 0);
    const own = this.#sandboxUsage.get(s.id) ?? {};
    const net = own.network;
    return {
      attributes: {
        id: s.id,
        metadata: s.metadata,
        labels: s.config.labels,
        annotations: s.config.annotations,
      },
      linux: {
        cpu: {
          timestamp: ts,
          usageCoreNanoSeconds: { value: sum((c) => c.cpu?.usageCoreNanoSeconds?.value) },
        },
        memory: {
          timestamp: ts,
          workingSetBytes: { value: sum((c) => c.memory?.workingSetBytes?.value) },
          availableBytes: { value: sum((c) => c.memory?.availableBytes?.value) },
          usageBytes: { value: sum((c) => c.memory?.usageBytes?.value) },
          rssBytes: { value: sum((c) => c.memory?.rssBytes?.value) },
          pageFaults: { value: sum((c) => c.memory?.pageFaults?.value) },
          majorPageFaults: { value: sum((c) => c.memory?.majorPageFaults?.value) },
        },
        ...(net
          ? {
              network: {
                timestamp: ts,
                defaultInterface: {
                  name: net.name,
                  rxBytes: { value: net.rxBytes },
                  rxErrors: { value: net.rxErrors ?? 0 },
                  txBytes: { value: net.txBytes },
                  txErrors: { value: net.txErrors ?? 0 },
                },
                interfaces: [],
              },
            }
          : {}),
        process: { timestamp: ts, processCount: { value: own.processCount ?? containers.length } },
        containers,
      },
    };
  }

  /** Calls `listener` with each container StartContainer starts. */
  onContainerStarted(listener: (container: StartedContainer) => void): () => void {
    this.#startListeners.add(listener);
    return () => this.#startListeners.delete(listener);
  }

  #started(c: ContainerRecord): void {
    if (this.#startListeners.size === 0) return;
    const sandbox = this.#sandboxes.get(c.podSandboxId);
    const started: StartedContainer = {
      id: c.id,
      podSandboxId: c.podSandboxId,
      name: c.metadata.name,
      attempt: c.metadata.attempt,
      command: [...(c.config.command ?? [])],
      args: [...(c.config.args ?? [])],
      labels: c.config.labels,
      annotations: c.config.annotations,
      sandbox: {
        name: sandbox?.metadata.name ?? '',
        namespace: sandbox?.metadata.namespace ?? '',
        uid: sandbox?.metadata.uid ?? '',
        labels: sandbox?.config.labels ?? {},
        annotations: sandbox?.config.annotations ?? {},
      },
    };
    for (const listener of this.#startListeners) listener(started);
  }

  subscribe(listener: (event: ContainerEventResponse) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  // ---- RPCs ----

  handlers(): HandlerMap<RuntimeServiceTypes> {
    return {
      Version: () => ({
        version: '0.1.0',
        runtimeName: this.#opts.runtimeName,
        runtimeVersion: this.#opts.runtimeVersion,
        runtimeApiVersion: 'v1',
      }),

      Status: () => ({
        status: {
          conditions: (['RuntimeReady', 'NetworkReady'] as const).map((type) => ({
            type,
            status: this.conditions[type].status,
            reason: this.conditions[type].reason ?? '',
            message: this.conditions[type].message ?? '',
          })),
        },
        info: {},
        runtimeHandlers: this.runtimeHandlers.map((h) => ({
          name: h.name,
          features: {
            recursiveReadOnlyMounts: h.recursiveReadOnlyMounts === true,
            userNamespaces: h.userNamespaces === true,
          },
        })),
        ...(this.features
          ? {
              features: {
                supplementalGroupsPolicy: this.features.supplementalGroupsPolicy === true,
                userNamespacesHostNetwork: this.features.userNamespacesHostNetwork === true,
              },
            }
          : {}),
      }),

      UpdateRuntimeConfig: (req) => {
        this.podCidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
        return {};
      },

      RunPodSandbox: (req) => {
        const config = req.config;
        const metadata = config?.metadata;
        if (!config || !metadata) throw new StatusError('Unknown', 'sandbox config must include metadata');
        const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE;
        if (hostNetwork && config.hostname) {
          // runc refuses a hostname without a private UTS namespace; the kubelet never sets one.
          throw new StatusError(
            'Unknown',
            'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to set hostname without a private UTS namespace: unknown',
          );
        }
        const handler = req.runtimeHandler;
        if (
          handler &&
          this.runtimeHandlers.length > 0 &&
          !this.runtimeHandlers.some((h) => h.name === handler)
        ) {
          // containerd's answer for a handler its config does not name.
          throw new StatusError(
            'Unknown',
            `failed to get sandbox runtime: no runtime for ${JSON.stringify(handler)} is configured`,
          );
        }
        const id = newId();
        const name = [metadata.name, metadata.namespace, metadata.uid, String(metadata.attempt)].join('_');
        this.#reserve(name, id, 'sandbox');
        this.#sandboxes.set(id, {
          id,
          name,
          metadata,
          config,
          state: PodSandboxState.SANDBOX_READY,
          createdAt: this.#nowNs(),
          ip: hostNetwork ? '' : this.#allocateIp(),
          runtimeHandler: req.runtimeHandler,
        });
        this.#sandboxesByPod.add(config.labels[podUidLabel], id);
        return { podSandboxId: id };
      },

      StopPodSandbox: (req) => {
        const sandbox = this.#sandbox(req.podSandboxId);
        for (const c of candidates(this.#containers, this.#containersBySandbox.get(sandbox.id))) {
          if (c.state === ContainerState.CONTAINER_RUNNING) {
            // containerd stops them with a zero grace period.
            this.#exit(c, KILLED_EXIT_CODE);
          }
        }
        sandbox.state = PodSandboxState.SANDBOX_NOTREADY;
        // containerd tears the network down and reports no IP for a stopped sandbox.
        sandbox.ip = '';
        return {};
      },

      RemovePodSandbox: (req) => {
        const sandbox =
          this.#sandboxes.get(req.podSandboxId) ?? this.#byPrefix(this.#sandboxes, req.podSandboxId);
        if (!sandbox) return {}; // idempotent
        for (const c of [...candidates(this.#containers, this.#containersBySandbox.get(sandbox.id))]) {
          this.#remove(c);
        }
        sandbox.state = PodSandboxState.SANDBOX_NOTREADY;
        this.#sandboxes.delete(sandbox.id);
        this.#sandboxesByPod.delete(sandbox.config.labels[podUidLabel], sandbox.id);
        this.#names.delete(sandbox.name);
        this.#sandboxUsage.delete(sandbox.id);
        return {};
      },

      PodSandboxStatus: (req) => {
        const sandbox =
          this.#sandboxes.get(req.podSandboxId) ?? this.#byPrefix(this.#sandboxes, req.podSandboxId);
        if (!sandbox)
          throw new StatusError('NotFound', 'an error occurred when try to find sandbox: not found');
        return {
          status: this.#sandboxStatus(sandbox),
          info: {},
          containersStatuses: [],
          timestamp: this.#nowNs(),
        };
      },

      ListPodSandbox: (req) => {
        const f = req.filter;
        const uid = f?.labelSelector?.[podUidLabel];
        const pool = candidates(
          this.#sandboxes,
          uid !== undefined ? this.#sandboxesByPod.get(uid) : undefined,
        );
        const items = [...pool].filter(
          (s) =>
            (!f?.id || s.id.startsWith(f.id)) &&
            (f?.state === undefined || s.state === f.state.state) &&
            matchesLabels(s.config.labels, f?.labelSelector ?? {}),
        );
        return { items: items.map((s) => this.#sandboxItem(s)) };
      },

      CreateContainer: (req) => {
        const sandbox =
          this.#sandboxes.get(req.podSandboxId) ?? this.#byPrefix(this.#sandboxes, req.podSandboxId);
        if (!sandbox) {
          throw new StatusError('NotFound', `failed to find sandbox id "${req.podSandboxId}": not found`);
        }
        if (sandbox.state !== PodSandboxState.SANDBOX_READY) {
          throw new StatusError(
            'NotFound',
            `failed to get sandbox container task: no running task found: task ${sandbox.id} not found: not found`,
          );
        }
        const config = req.config;
        const metadata = config?.metadata;
        if (!config || !metadata) throw new StatusError('Unknown', 'container config must include metadata');
        const ref = config.image?.image ?? '';
        const image = this.#opts.images.resolve(ref);
        if (!image) {
          throw new StatusError('NotFound', `failed to resolve image "${ref}": not found`);
        }
        const id = newId();
        const name = [
          metadata.name,
          sandbox.metadata.name,
          sandbox.metadata.namespace,
          sandbox.metadata.uid,
          String(metadata.attempt),
        ].join('_');
        this.#reserve(name, id, 'container');
        const logPath =
          sandbox.config.logDirectory && config.logPath
            ? path.join(sandbox.config.logDirectory, config.logPath)
            : '';
        const record: ContainerRecord = {
          id,
          name,
          podSandboxId: sandbox.id,
          metadata,
          config,
          image: imageSpecOf(config.image),
          imageRef: imageRefOf(image),
          // containerd 1.6 predates ContainerStatus.image_id and leaves it empty.
          imageId: '',
          resources: { ...ZERO_LINUX_RESOURCES, ...config.linux?.resources },
          state: ContainerState.CONTAINER_CREATED,
          createdAt: this.#nowNs(),
          startedAt: 0,
          finishedAt: 0,
          exitCode: 0,
          reason: '',
          message: '',
          logPath,
          usage: {},
        };
        this.#containers.set(id, record);
        this.#containersByPod.add(config.labels[podUidLabel], id);
        this.#containersBySandbox.add(sandbox.id, id);
        this.#emit(record, CONTAINER_EVENT.CONTAINER_CREATED_EVENT);
        return { containerId: id };
      },

      StartContainer: (req) => {
        const c = this.#container(req.containerId);
        if (c.state !== ContainerState.CONTAINER_CREATED) {
          throw new StatusError(
            'Unknown',
            `failed to set starting state for container "${c.id}": container is in ${stateName(c.state)} state`,
          );
        }
        const sandbox = this.#sandboxes.get(c.podSandboxId);
        if (sandbox?.state !== PodSandboxState.SANDBOX_READY) {
          throw new StatusError('Unknown', `sandbox container "${c.podSandboxId}" is not running`);
        }
        if (c.logPath) {
          // containerd opens (creates) the log file when it starts the container.
          fs.mkdirSync(path.dirname(c.logPath), { recursive: true });
          fs.appendFileSync(c.logPath, '');
        }
        c.state = ContainerState.CONTAINER_RUNNING;
        c.startedAt = this.#nowNs();
        this.#emit(c, CONTAINER_EVENT.CONTAINER_STARTED_EVENT);
        this.#started(c);
        return {};
      },

      StopContainer: (req) => {
        const c = this.#container(req.containerId);
        // Stopping a created or exited container is a no-op (idempotent, as containerd).
        // Without a grace period the runtime kills at once (SIGKILL, 137).
        if (c.state === ContainerState.CONTAINER_RUNNING) {
          this.#exit(c, req.timeout > 0 ? this.#opts.stopExitCode : KILLED_EXIT_CODE);
        }
        return {};
      },

      RemoveContainer: (req) => {
        const c = this.#containers.get(req.containerId) ?? this.#byPrefix(this.#containers, req.containerId);
        // CRI: a running container is forcibly removed; a missing one is not an error.
        if (c) this.#remove(c);
        return {};
      },

      ListContainers: (req) => {
        const f = req.filter;
        const uid = f?.labelSelector?.[podUidLabel];
        const pool = candidates(
          this.#containers,
          uid !== undefined ? this.#containersByPod.get(uid) : undefined,
        );
        const items = [...pool].filter(
          (c) =>
            (!f?.id || c.id.startsWith(f.id)) &&
            (!f?.podSandboxId || c.podSandboxId.startsWith(f.podSandboxId)) &&
            (f?.state === undefined || c.state === f.state.state) &&
            matchesLabels(c.config.labels, f?.labelSelector ?? {}),
        );
        return { containers: items.map((c) => this.#containerItem(c)) };
      },

      ContainerStatus: (req) => ({
        status: this.#containerStatus(this.#container(req.containerId)),
        info: {},
      }),

      UpdateContainerResources: (req) => {
        const c = this.#container(req.containerId);
        // The request carries the complete new set (absent fields are zero), as the kubelet sends it.
        if (req.linux) c.resources = req.linux;
        return {};
      },

      ReopenContainerLog: (req) => {
        const c = this.#container(req.containerId);
        if (c.state !== ContainerState.CONTAINER_RUNNING) {
          throw new StatusError('Unknown', 'container is not running');
        }
        // containerd reopens the log by path: a rotated (renamed) file is replaced by a new one.
        if (c.logPath) {
          fs.mkdirSync(path.dirname(c.logPath), { recursive: true });
          fs.appendFileSync(c.logPath, '');
        }
        return {};
      },

      ContainerStats: (req) => ({ stats: this.#containerStats(this.#container(req.containerId)) }),

      ListContainerStats: (req) => {
        const f = req.filter;
        const items = [...this.#containers.values()].filter(
          (c) =>
            c.state === ContainerState.CONTAINER_RUNNING &&
            (!f?.id || c.id.startsWith(f.id)) &&
            (!f?.podSandboxId || c.podSandboxId.startsWith(f.podSandboxId)) &&
            matchesLabels(c.config.labels, f?.labelSelector ?? {}),
        );
        return { stats: items.map((c) => this.#containerStats(c)) };
      },

      PodSandboxStats: (req) => ({ stats: this.#podSandboxStats(this.#sandbox(req.podSandboxId)) }),

      ListPodSandboxStats: (req) => {
        const f = req.filter;
        const items = [...this.#sandboxes.values()].filter(
          (s) =>
            s.state === PodSandboxState.SANDBOX_READY &&
            (!f?.id || s.id.startsWith(f.id)) &&
            matchesLabels(s.config.labels, f?.labelSelector ?? {}),
        );
        return { stats: items.map((s) => this.#podSandboxStats(s)) };
      },

      ExecSync: async (req) => {
        const c = this.#container(req.containerId);
        if (c.state !== ContainerState.CONTAINER_RUNNING) {
          throw new StatusError(
            'Unknown',
            `failed to exec in container: container is in ${stateName(c.state)} state`,
          );
        }
        const call: ExecCall = { containerId: c.id, cmd: req.cmd, timeout: req.timeout };
        const joined = req.cmd.join(' ');
        const registration = this.#exec.find(({ matcher }) =>
          typeof matcher === 'string'
            ? matcher === joined
            : matcher instanceof RegExp
              ? matcher.test(joined)
              : matcher(call),
        );
        const answer: Promise<ExecResult> = registration
          ? Promise.resolve(registration.handler(call))
          : Promise.resolve({});
        const result = await withTimeout(answer, req.timeout);
        return {
          stdout: toBytes(result.stdout),
          stderr: toBytes(result.stderr),
          exitCode: result.exitCode ?? 0,
        };
      },

      // containerd answers a URL with a one-time token under its streaming server.
      Exec: (req) => {
        const c = this.#runningForStream(req.containerId, 'exec');
        return { url: this.#streamingCall('Exec', c.id, req.cmd, req, []) };
      },

      Attach: (req) => {
        const c = this.#runningForStream(req.containerId, 'attach');
        return { url: this.#streamingCall('Attach', c.id, [], req, []) };
      },

      PortForward: (req) => {
        const sb = this.#sandbox(req.podSandboxId);
        if (sb.state !== PodSandboxState.SANDBOX_READY) {
          throw new StatusError('FailedPrecondition', `sandbox "${sb.id}" is not running`);
        }
        const none = { tty: false, stdin: false, stdout: false, stderr: false };
        return { url: this.#streamingCall('PortForward', sb.id, [], none, req.port) };
      },

      GetContainerEvents: async (_req, stream) => {
        if (!this.containerEvents)
          throw new StatusError(
            'Unimplemented',
            'unknown method GetContainerEvents for service runtime.v1.RuntimeService',
          );
        await new Promise<void>((resolve) => {
          const unsubscribe = this.subscribe((event) => stream.write(event));
          stream.signal.addEventListener(
            'abort',
            () => {
              unsubscribe();
              resolve();
            },
            { once: true },
          );
        });
      },
    };
  }
}

function toBytes(value: string | Uint8Array | undefined): Uint8Array {
  if (value === undefined) return new Uint8Array();
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}

async function withTimeout<T>(promise: Promise<T>, seconds: number): Promise<T> {
  if (!seconds || seconds <= 0) return promise;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new StatusError(
            'DeadlineExceeded',
            `failed to exec in container: timeout ${seconds}s exceeded: context deadline exceeded`,
          ),
        ),
      seconds * 1000,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
