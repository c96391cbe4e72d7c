import dns from 'node:dns/promises';
import os from 'node:os';
import {
  type Clock,
  deepCopy,
  type EventObjectRef,
  type EventRecorder,
  type Logger,
  type Node,
  type NodeApi,
  NodeApiError,
  type NodePressureProvider,
  noopEventRecorder,
  noopLogger,
  type RuntimeVersion,
  type Taint,
  type Timer,
} from '@kubelet-kit/core';
import { nodeIPError } from './net.js';
import { createNodeStatusPatch, nodeStatusHasChanged } from './patch.js';
import {
  initialNodeObject,
  reconcileCMADAnnotation,
  reconcileExtendedResource,
  reconcileHugePageResource,
  updateDefaultLabels,
} from './registration.js';
import type { ResourceAmounts } from './resources.js';
import {
  daemonEndpoints,
  defaultNodeStatusMaxImages,
  diskPressureCondition,
  goRuntime,
  type HostVersionInfo,
  hostArchitecture,
  hostOperatingSystem,
  type ImageInfo,
  images,
  type MachineInfo,
  machineInfo,
  memoryPressureCondition,
  type NodeEventFn,
  nodeAddress,
  pidPressureCondition,
  readyCondition,
  type Setter,
  versionInfo,
  volumesInUse,
} from './setters.js';

/** How often the status is computed, ms (upstream `nodeStatusUpdateFrequency`). @public */
export const defaultNodeStatusUpdateFrequencyMs = 10_000;
/** How often an unchanged status is still sent, ms (upstream `nodeStatusReportFrequency`). @public */
export const defaultNodeStatusReportFrequencyMs = 5 * 60_000;
/** Attempts of one status update (upstream `nodeStatusUpdateRetry`). @public */
export const nodeStatusUpdateRetry = 5;
/** Registration's first wait, ms; it doubles up to {@link maxRegistrationBackoffMs}. @public */
export const initialRegistrationBackoffMs = 100;
/** Registration's longest wait, ms (upstream: 7 s). @public */
export const maxRegistrationBackoffMs = 7000;

/**
 * How long a registration call may take. Upstream registers through its main client, which has
 * no timeout of its own; the heartbeat's (at most the update frequency) would fail registration
 * on a slow API server with a short update frequency. A bound is kept so a hung call is retried.
 */
const registrationTimeoutMs = 40_000;

/** What the node status setters read (upstream's `defaultNodeStatusFuncs` arguments). @public */
export interface NodeStatusInputs {
  /** The Hostname address: `--hostname-override`, or the host's name. */
  readonly hostname: string;
  /** `--node-ip` as given (one IP or a dual-stack pair); empty or absent to find one. */
  readonly nodeIPs?: readonly string[];
  /** The host's interface addresses; default `os.networkInterfaces()`. */
  readonly interfaceAddresses?: () => readonly string[];
  /** DNS lookup of the node name; default `dns.lookup(all)`. */
  readonly lookupIP?: (name: string) => Promise<readonly string[]>;
  /** The last resort for an InternalIP; default the first global unicast IPv4 of an interface. */
  readonly chooseHostInterface?: () => string | undefined;
  /** `--max-pods`; default 110. */
  readonly maxPods?: number;
  /** `--pods-per-core`; default 0 (none). */
  readonly podsPerCore?: number;
  readonly machineInfo: () => MachineInfo;
  /** Further capacity: `ephemeral-storage` bytes. */
  readonly capacity?: () => ResourceAmounts;
  /** Extended resources the node offers (capacity = allocatable). */
  readonly extendedResources?: () => ResourceAmounts;
  /** system-reserved + kube-reserved + hard eviction thresholds, taken off allocatable. */
  readonly allocatableReservation?: () => ResourceAmounts;
  readonly versionInfo: () => HostVersionInfo | Promise<HostVersionInfo>;
  /** The CRI Version call. */
  readonly runtimeVersion: () => Promise<RuntimeVersion>;
  /** e.g. `v1.34.0`. */
  readonly kubeletVersion: string;
  /** The kubelet's port, reported as `daemonEndpoints.kubeletEndpoint.Port` (a getter: known once serving). */
  readonly kubeletPort: number | (() => number);
  /** The runtime's images (CRI ListImages). */
  readonly imageList: () => Promise<readonly ImageInfo[]>;
  /** Default 50 (upstream `nodeStatusMaxImages`); -1 for all. */
  readonly maxImages?: number;
  /** Runtime down / not ready, PLEG not healthy: what makes the node NotReady. */
  readonly runtimeErrors: () => readonly string[];
  /** The runtime's network not ready. */
  readonly networkErrors: () => readonly string[];
  readonly storageErrors?: () => readonly string[];
  /** An eviction manager's pressure verdicts; without one no pressure is reported. */
  readonly pressure?: NodePressureProvider;
  /** The volume manager's volumes in use (attachable volumes only, upstream). */
  readonly volumesInUse?: { synced(): boolean; inUse(): readonly string[] };
  /** Go's GOOS / GOARCH; default this process's. */
  readonly operatingSystem?: string;
  readonly architecture?: string;
}

/** Options of {@link NodeStatusManager}. @public */
export interface NodeStatusManagerOptions {
  readonly nodeName: string;
  readonly api: NodeApi;
  readonly inputs: NodeStatusInputs;
  /** The Node's labels: the defaults (hostname, os, arch; see `defaultNodeLabelsFor`) and `--node-labels`. */
  readonly labels: Readonly<Record<string, string>>;
  /** `--register-with-taints`. */
  readonly taints?: readonly Taint[];
  /** `--register-node`; default true. False: the Node must exist, only its status is updated. */
  readonly registerNode?: boolean;
  /** Default {@link defaultNodeStatusUpdateFrequencyMs}. */
  readonly nodeStatusUpdateFrequencyMs?: number;
  /** Default {@link defaultNodeStatusReportFrequencyMs}. */
  readonly nodeStatusReportFrequencyMs?: number;
  /**
   * A cached view of the Node (upstream's node lister), read on an update's first attempt; without
   * one every update reads the Node from the API server.
   */
  readonly nodeLister?: { get(name: string): Node | undefined };
  /**
   * How long one API call may take, ms; default the update frequency, at most 40 s (upstream's
   * heartbeat client timeout: the smaller of the update frequency and the lease duration).
   */
  readonly requestTimeoutMs?: number;
  /** Setters run after upstream's, in order. */
  readonly extraSetters?: readonly Setter[];
  readonly clock: Clock;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
}

/** The labels upstream's `initialNode` gives every Node: hostname, os and arch, stable and beta. @public */
export function defaultNodeLabelsFor(
  hostname: string,
  operatingSystem = hostOperatingSystem(),
  architecture = hostArchitecture(),
): Record<string, string> {
  return {
    'kubernetes.io/hostname': hostname,
    'kubernetes.io/os': operatingSystem,
    'kubernetes.io/arch': architecture,
    'beta.kubernetes.io/os': operatingSystem,
    'beta.kubernetes.io/arch': architecture,
  };
}

function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((addrs) => (addrs ?? []).map((a) => a.address));
}

function chooseHostInterface(): string | undefined {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.')) return a.address;
    }
  }
  return undefined;
}

async function lookupIP(name: string): Promise<string[]> {
  try {
    return (await dns.lookup(name, { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Registers this node's Node object and keeps its status current: upstream
 * `kubelet_node_status.go` (`registerWithAPIServer`, `updateNodeStatus`) with the setters of
 * `pkg/kubelet/nodestatus`. Every `nodeStatusUpdateFrequency` the status is computed; it is
 * patched (`nodes/status`, strategic merge) when it changed or `nodeStatusReportFrequency` has
 * passed since the last patch.
 *
 * @public
 */
export class NodeStatusManager {
  readonly #o: NodeStatusManagerOptions;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #nodeRef: EventObjectRef;
  readonly #setters: readonly Setter[];
  readonly #updateFrequencyMs: number;
  readonly #reportFrequencyMs: number;
  readonly #requestTimeoutMs: number;
  #registrationCompleted = false;
  #lastStatusReportTime: number | undefined;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #node: Node | undefined;
  #registered: { promise: Promise<Node>; resolve: (node: Node) => void };

  constructor(options: NodeStatusManagerOptions) {
    this.#o = options;
    this.#logger = (options.logger ?? noopLogger).child({ component: 'node-status' });
    this.#recorder = options.recorder ?? noopEventRecorder;
    // Upstream's nodeRef: the node's name stands in for its UID.
    this.#nodeRef = { kind: 'Node', name: options.nodeName, uid: options.nodeName };
    this.#updateFrequencyMs = options.nodeStatusUpdateFrequencyMs ?? defaultNodeStatusUpdateFrequencyMs;
    this.#reportFrequencyMs = options.nodeStatusReportFrequencyMs ?? defaultNodeStatusReportFrequencyMs;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? Math.min(this.#updateFrequencyMs, 40_000);
    let resolve!: (node: Node) => void;
    const promise = new Promise<Node>((r) => {
      resolve = r;
    });
    this.#registered = { promise, resolve };
    this.#setters = [...this.#defaultSetters(), ...(options.extraSetters ?? [])];
  }

  /** Resolves with the Node once it is registered (or, with registerNode false, first read). */
  registeredNode(): Promise<Node> {
    return this.#registered.promise;
  }

  /** The Node as last read or written; undefined before that. */
  get node(): Node | undefined {
    return this.#node;
  }

  /** Records `Starting`, then syncs now and every nodeStatusUpdateFrequency until `stop()`. */
  start(): void {
    if (this.#loop) return;
    this.#recorder.event(this.#nodeRef, 'Normal', 'Starting', 'Starting kubelet.');
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = (async () => {
      while (!abort.signal.aborted) {
        try {
          await this.syncNodeStatus(abort.signal);
          await this.#o.clock.sleep(this.#updateFrequencyMs, abort.signal);
        } catch (err) {
          if (abort.signal.aborted) return;
          this.#logger.error({ err: errorText(err) }, 'node status sync failed');
        }
      }
    })();
  }

  /** Ends the loop, an attempt in flight included. */
  async stop(): Promise<void> {
    this.#abort?.abort(new Error('node status manager stopped'));
    await this.#loop;
    this.#loop = undefined;
  }

  /** Upstream `syncNodeStatus`: register when asked to and not yet done, then update the status. */
  async syncNodeStatus(signal?: AbortSignal): Promise<void> {
    if (this.#o.registerNode ?? true) await this.registerWithAPIServer(signal);
    try {
      await this.updateNodeStatus(signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      this.#logger.error({ err: errorText(err) }, 'Unable to update node status');
    }
  }

  /**
   * Upstream `registerWithAPIServer`: returns at once when registered; otherwise waits 100 ms,
   * doubling to 7 s, before each attempt, until one succeeds (or `signal` aborts).
   */
  async registerWithAPIServer(signal?: AbortSignal): Promise<void> {
    if (this.#registrationCompleted) return;
    let step = initialRegistrationBackoffMs;
    for (;;) {
      await this.#o.clock.sleep(step, signal);
      step = Math.min(step * 2, maxRegistrationBackoffMs);
      let node: Node;
      try {
        node = await this.initialNode();
      } catch (err) {
        this.#logger.error({ err: errorText(err) }, 'Unable to construct v1.Node object for kubelet');
        continue;
      }
      this.#logger.info({ node: this.#o.nodeName }, 'Attempting to register node');
      if (await this.tryRegisterWithAPIServer(node, signal)) {
        this.#logger.info({ node: this.#o.nodeName }, 'Successfully registered node');
        this.#registrationCompleted = true;
        return;
      }
      signal?.throwIfAborted();
    }
  }

  /**
   * Upstream `tryRegisterWithAPIServer`: creates the Node; when it exists, brings its
   * attach/detach annotation, default labels, extended resources and hugepages in line (one
   * status patch). True when the node is registered.
   */
  async tryRegisterWithAPIServer(node: Node, signal?: AbortSignal): Promise<boolean> {
    const name = this.#o.nodeName;
    try {
      const created = await this.#call((s) => this.#o.api.createNode(node, s), signal, registrationTimeoutMs);
      this.#recorder.event(
        this.#nodeRef,
        'Normal',
        'RegisteredNode',
        `Registered Node ${name} with the API server`,
      );
      this.#known(created);
      return true;
    } catch (err) {
      if (!(err instanceof NodeApiError && err.code === 'AlreadyExists')) {
        this.#logger.error({ node: name, err: errorText(err) }, 'Unable to register node with API server');
        return false;
      }
    }
    let existing: Node;
    try {
      existing = await this.#call((s) => this.#o.api.getNode(name, s), signal, registrationTimeoutMs);
    } catch (err) {
      this.#logger.error({ node: name, err: errorText(err) }, 'Unable to register node with API server');
      return false;
    }
    const original = deepCopy(existing);
    this.#logger.info({ node: name }, 'Node was previously registered');
    let requiresUpdate = reconcileCMADAnnotation(node, existing);
    requiresUpdate = updateDefaultLabels(node, existing) || requiresUpdate;
    requiresUpdate = reconcileExtendedResource(node, existing) || requiresUpdate;
    requiresUpdate = reconcileHugePageResource(node, existing) || requiresUpdate;
    if (requiresUpdate) {
      const patch = createNodeStatusPatch(original, existing);
      if (patch) {
        try {
          existing = await this.#call(
            (s) => this.#o.api.patchNodeStatus(name, patch, s),
            signal,
            registrationTimeoutMs,
          );
        } catch (err) {
          this.#logger.error(
            { node: name, err: errorText(err) },
            'Unable to reconcile node with API server, error updating node',
          );
          return false;
        }
      }
    }
    this.#known(existing);
    return true;
  }

  /** Upstream `initialNode`: the Node to create, its status filled by the setters. */
  async initialNode(): Promise<Node> {
    const node = initialNodeObject({
      nodeName: this.#o.nodeName,
      labels: this.#o.labels,
      ...(this.#o.taints ? { taints: this.#o.taints } : {}),
    });
    await this.setNodeStatus(node);
    return node;
  }

  /** Upstream `setNodeStatus`: runs every setter; one that fails is logged and the rest still run. */
  async setNodeStatus(node: Node): Promise<void> {
    for (const setter of this.#setters) {
      try {
        await setter(node);
      } catch (err) {
        this.#logger.warn(
          { node: this.#o.nodeName, err: errorText(err) },
          'Failed to set some node status fields',
        );
      }
    }
  }

  /** Upstream `updateNodeStatus`: up to five attempts; rejects when all fail. */
  async updateNodeStatus(signal?: AbortSignal): Promise<void> {
    for (let i = 0; i < nodeStatusUpdateRetry; i++) {
      try {
        await this.tryUpdateNodeStatus(i, signal);
        return;
      } catch (err) {
        signal?.throwIfAborted();
        this.#logger.error({ err: errorText(err) }, 'Error updating node status, will retry');
      }
    }
    throw new Error('update node status exceeds retry count');
  }

  /**
   * Upstream `tryUpdateNodeStatus`: reads the Node (the lister on the first attempt, the API
   * server after), computes its status and patches it when it changed or is due for a report.
   */
  async tryUpdateNodeStatus(tryNumber: number, signal?: AbortSignal): Promise<void> {
    const name = this.#o.nodeName;
    let original: Node | undefined;
    try {
      original =
        tryNumber === 0 && this.#o.nodeLister
          ? this.#o.nodeLister.get(name)
          : await this.#call((s) => this.#o.api.getNode(name, s), signal);
    } catch (err) {
      throw new Error(`error getting node ${JSON.stringify(name)}: ${errorText(err)}`, { cause: err });
    }
    if (!original) throw new Error(`nil ${JSON.stringify(name)} node object`);
    if (!(this.#o.registerNode ?? true)) this.#known(original);
    const { node, changed } = await this.#updateNode(original);
    const due =
      this.#lastStatusReportTime === undefined ||
      this.#o.clock.since(this.#lastStatusReportTime) >= this.#reportFrequencyMs;
    if (!changed && !due) return;
    const patch = createNodeStatusPatch(original, node) ?? {};
    const updated = await this.#call((s) => this.#o.api.patchNodeStatus(name, patch, s), signal);
    this.#lastStatusReportTime = this.#o.clock.now();
    this.#known(updated);
  }

  /** Upstream `updateNode`: os / arch labels put right, the status recomputed; `changed` as upstream. */
  async #updateNode(original: Node): Promise<{ node: Node; changed: boolean }> {
    const node = deepCopy(original);
    node.metadata ??= {};
    let labelsChanged = false;
    const os = this.#o.inputs.operatingSystem ?? hostOperatingSystem();
    const arch = this.#o.inputs.architecture ?? hostArchitecture();
    for (const [key, value] of [
      ['kubernetes.io/os', os],
      ['kubernetes.io/arch', arch],
    ] as const) {
      if (node.metadata.labels?.[key] !== value) {
        node.metadata.labels = { ...node.metadata.labels, [key]: value };
        labelsChanged = true;
      }
    }
    await this.setNodeStatus(node);
    return { node, changed: labelsChanged || nodeStatusHasChanged(original.status, node.status) };
  }

  /**
   * One API call, given up after the request timeout (a silent API server must not stall the
   * loop) or when `outer` aborts; its signal tells the client to stop too.
   */
  async #call<T>(
    fn: (signal: AbortSignal) => Promise<T>,
    outer: AbortSignal | undefined,
    timeoutMs = this.#requestTimeoutMs,
  ): Promise<T> {
    outer?.throwIfAborted();
    const abort = new AbortController();
    let timer: Timer | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = this.#o.clock.setTimeout(() => {
        const err = new NodeApiError('Unavailable', `request timed out after ${timeoutMs} ms`);
        abort.abort(err);
        reject(err);
      }, timeoutMs);
      onAbort = () => {
        abort.abort(outer?.reason);
        reject(outer?.reason);
      };
      outer?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([fn(abort.signal), stopped]);
    } finally {
      timer?.cancel();
      if (onAbort) outer?.removeEventListener('abort', onAbort);
    }
  }

  #known(node: Node): void {
    this.#node = node;
    this.#registered.resolve(node);
  }

  #recordEvent: NodeEventFn = (type, reason, message) => {
    this.#recorder.event(
      this.#nodeRef,
      type,
      reason,
      message ?? `Node ${this.#o.nodeName} status is now: ${reason}`,
    );
  };

  /** Upstream `defaultNodeStatusFuncs`, in its order (conditions last, Ready after the pressures). */
  #defaultSetters(): Setter[] {
    const i = this.#o.inputs;
    const now = () => this.#o.clock.now();
    const record = this.#recordEvent;
    const addresses = i.interfaceAddresses ?? interfaceAddresses;
    const nodeIPs = i.nodeIPs ?? [];
    // Upstream's host validation (nodeIPsValidator): a bad --node-ip keeps the node NotReady.
    const hostErrors = () => {
      const errs: string[] = [];
      const hostIPs = addresses();
      const labels = ['nodeIP', 'secondaryNodeIP'];
      nodeIPs.slice(0, 2).forEach((ip, n) => {
        if (ip === '0.0.0.0' || ip === '::') return;
        const err = nodeIPError(ip, hostIPs);
        if (err) errs.push(`failed to validate ${labels[n]}: ${err}`);
      });
      return errs;
    };
    const pressure = i.pressure;
    return [
      nodeAddress({
        nodeIPs,
        hostname: i.hostname,
        interfaceAddresses: addresses,
        lookupIP: i.lookupIP ?? lookupIP,
        chooseHostInterface: i.chooseHostInterface ?? chooseHostInterface,
      }),
      machineInfo({
        nodeName: this.#o.nodeName,
        maxPods: i.maxPods ?? 110,
        ...(i.podsPerCore !== undefined ? { podsPerCore: i.podsPerCore } : {}),
        machineInfo: i.machineInfo,
        ...(i.capacity ? { capacity: i.capacity } : {}),
        ...(i.extendedResources ? { extendedResources: i.extendedResources } : {}),
        allocatableReservation: i.allocatableReservation ?? (() => ({})),
        recordEvent: record,
        logger: this.#logger,
      }),
      versionInfo({
        versionInfo: i.versionInfo,
        runtimeVersion: i.runtimeVersion,
        kubeletVersion: i.kubeletVersion,
      }),
      daemonEndpoints(i.kubeletPort),
      images(i.maxImages ?? defaultNodeStatusMaxImages, i.imageList),
      goRuntime(i.operatingSystem, i.architecture),
      memoryPressureCondition(now, () => pressure?.isUnderMemoryPressure() ?? false, record),
      diskPressureCondition(now, () => pressure?.isUnderDiskPressure() ?? false, record),
      pidPressureCondition(now, () => pressure?.isUnderPIDPressure() ?? false, record),
      readyCondition({
        now,
        runtimeErrors: i.runtimeErrors,
        networkErrors: i.networkErrors,
        ...(i.storageErrors ? { storageErrors: i.storageErrors } : {}),
        hostErrors,
        recordEvent: record,
      }),
      ...(i.volumesInUse
        ? [
            volumesInUse(
              () => i.volumesInUse!.synced(),
              () => i.volumesInUse!.inUse(),
            ),
          ]
        : []),
    ];
  }
}
