import {
  type EventType,
  goArch,
  goOS,
  type Logger,
  type Node,
  type NodeCondition,
  type NodeStatus,
  type NodeSystemInfo,
  quantityMilliValue,
  quantityValue,
  type RuntimeVersion,
} from '@kubelet-kit/core';
import { canonicalIP, isIPv4, nodeIPError } from './net.js';
import {
  formatResourceQuantity,
  hugePageResourceName,
  isExtendedResourceName,
  isHugePageResourceName,
  type ResourceAmounts,
} from './resources.js';

// Upstream pkg/kubelet/nodestatus/setters.go: each setter fills one part of the Node's status
// in place; a setter that fails throws, and the caller logs it and runs the others.

/** Fills part of a Node's status in place; throws when it could not (upstream `Setter`). @public */
export type Setter = (node: Node) => void | Promise<void>;

/**
 * Records a Node event (upstream `recordNodeStatusEvent` / `recordEvent`); without `message`
 * the event reads `Node <name> status is now: <reason>`.
 *
 * @public
 */
export type NodeEventFn = (type: EventType, reason: string, message?: string) => void;

/** Most names reported per image (upstream `MaxNamesPerImageInNodeStatus`). @public */
export const maxNamesPerImageInNodeStatus = 5;

/** An API time (RFC 3339, whole seconds, as the API server stores it). @internal */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function status(node: Node): NodeStatus {
  // kubernetes-types marks status read-only (the server's to set); the setters are its writers.
  const n = node as { status?: NodeStatus };
  n.status ??= {};
  return n.status;
}

function nodeInfo(node: Node): NodeSystemInfo {
  const s = status(node);
  s.nodeInfo ??= {
    architecture: '',
    bootID: '',
    containerRuntimeVersion: '',
    kernelVersion: '',
    kubeProxyVersion: '',
    kubeletVersion: '',
    machineID: '',
    operatingSystem: '',
    osImage: '',
    systemUUID: '',
  };
  return s.nodeInfo;
}

/** Options of {@link nodeAddress}. @public */
export interface NodeAddressOptions {
  /** `--node-ip`: one IP or a dual-stack pair; empty to find one. `0.0.0.0` / `::` count as unset. */
  readonly nodeIPs?: readonly string[];
  /** The Hostname address (upstream `kl.hostname`: `--hostname-override` or the host's name). */
  readonly hostname: string;
  /** The addresses of the host's interfaces (upstream `net.InterfaceAddrs`). */
  readonly interfaceAddresses: () => readonly string[];
  /** Resolves a name to its IPs (upstream `net.LookupIP`); failures resolve empty. */
  readonly lookupIP: (name: string) => Promise<readonly string[]>;
  /**
   * The IP of the interface of the default route (upstream `ChooseHostInterface`), the last
   * resort; undefined when there is none.
   */
  readonly chooseHostInterface: () => string | undefined;
}

function specified(ip: string | undefined): ip is string {
  return ip !== undefined && ip !== '0.0.0.0' && ip !== '::';
}

/**
 * Upstream `NodeAddress` without a cloud provider: an InternalIP (the `--node-ip`, an IP given
 * as hostname, the node name's DNS answer in the preferred family, or the default route's
 * interface) and the Hostname address; with a dual-stack `--node-ip`, both IPs.
 *
 * @public
 */
export function nodeAddress(options: NodeAddressOptions): Setter {
  const [nodeIP, secondaryNodeIP] = options.nodeIPs ?? [];
  // `::` asks for IPv6 first when the IP is found; any other IPv4 or nothing prefers IPv4.
  const preferIPv4 = nodeIP === undefined || isIPv4(nodeIP);
  return async (node) => {
    const hostIPs = options.interfaceAddresses();
    if (specified(nodeIP)) {
      const err = nodeIPError(nodeIP, hostIPs);
      if (err) throw new Error(`failed to validate nodeIP: ${err}`);
    }
    if (specified(secondaryNodeIP)) {
      const err = nodeIPError(secondaryNodeIP, hostIPs);
      if (err) throw new Error(`failed to validate secondaryNodeIP: ${err}`);
    }
    let ipAddr: string | undefined;
    let lastErr: string | undefined;
    if (specified(nodeIP)) {
      ipAddr = canonicalIP(nodeIP);
    } else if (canonicalIP(options.hostname) !== undefined) {
      ipAddr = canonicalIP(options.hostname);
    } else {
      for (const addr of await options.lookupIP(node.metadata?.name ?? '')) {
        lastErr = nodeIPError(addr, hostIPs);
        if (lastErr !== undefined) continue;
        if (isIPv4(addr) === preferIPv4) {
          ipAddr = canonicalIP(addr);
          break;
        }
        ipAddr ??= canonicalIP(addr);
      }
      ipAddr ??= options.chooseHostInterface();
    }
    if (ipAddr === undefined) {
      throw new Error(
        `can't get ip address of node ${node.metadata?.name ?? ''}. error: ${lastErr ?? '<nil>'}`,
      );
    }
    const addresses = [{ type: 'InternalIP', address: ipAddr }];
    if (specified(nodeIP) && specified(secondaryNodeIP)) {
      addresses.push({ type: 'InternalIP', address: canonicalIP(secondaryNodeIP)! });
    }
    addresses.push({ type: 'Hostname', address: options.hostname });
    status(node).addresses = addresses;
  };
}

/** One hugepage size of the machine. @public */
export interface HugePagesInfo {
  readonly pageSizeKiB: number;
  readonly numPages: number;
}

/** What cadvisor's MachineInfo gives node status. @public */
export interface MachineInfo {
  readonly numCores: number;
  /** Bytes. */
  readonly memoryCapacity: number;
  /** `/etc/machine-id`. */
  readonly machineID: string;
  /** `/sys/class/dmi/id/product_uuid`, '' when unreadable. */
  readonly systemUUID: string;
  /** `/proc/sys/kernel/random/boot_id`. */
  readonly bootID: string;
  readonly hugePages?: readonly HugePagesInfo[];
}

/** Options of {@link machineInfo}. @public */
export interface MachineInfoOptions {
  readonly nodeName: string;
  /** `--max-pods`. */
  readonly maxPods: number;
  /** `--pods-per-core`; 0 (the default) for none. */
  readonly podsPerCore?: number;
  /** Throws when the machine cannot be read. */
  readonly machineInfo: () => MachineInfo;
  /** Further capacity (upstream `ContainerManager.GetCapacity`): only `ephemeral-storage` is taken. */
  readonly capacity?: () => ResourceAmounts;
  /** Extended resources offered, capacity = allocatable (the device plugins' part upstream). */
  readonly extendedResources?: () => ResourceAmounts;
  /** Taken off capacity for allocatable: system-reserved + kube-reserved + hard eviction thresholds. */
  readonly allocatableReservation: () => ResourceAmounts;
  readonly recordEvent: NodeEventFn;
  readonly logger?: Logger;
}

function amountOf(name: string, quantity: string): number {
  return name === 'cpu' ? quantityMilliValue(quantity) : quantityValue(quantity);
}

/**
 * Upstream `MachineInfo`: capacity (cpu, memory, hugepages, pods, ephemeral storage, extended
 * resources), allocatable (capacity less the reservation, hugepages also off memory, never
 * negative), machine ID, system UUID and boot ID (a changed boot ID records `Rebooted`).
 *
 * @public
 */
export function machineInfo(options: MachineInfoOptions): Setter {
  return (node) => {
    const s = status(node);
    // Kept, not replaced: an admin may advertise resources of their own in capacity.
    const capacity: Record<string, string> = { ...s.capacity };
    let extended: ResourceAmounts = {};
    let info: MachineInfo | undefined;
    let infoError: unknown;
    try {
      info = options.machineInfo();
    } catch (err) {
      infoError = err;
    }
    if (!info) {
      capacity.cpu = '0';
      capacity.memory = '0';
      capacity.pods = String(options.maxPods);
    } else {
      const ni = nodeInfo(node);
      ni.machineID = info.machineID;
      ni.systemUUID = info.systemUUID;
      capacity.cpu = formatResourceQuantity('cpu', info.numCores * 1000);
      capacity.memory = formatResourceQuantity('memory', info.memoryCapacity);
      for (const hp of info.hugePages ?? []) {
        const name = hugePageResourceName(hp.pageSizeKiB);
        capacity[name] = formatResourceQuantity(name, hp.numPages * hp.pageSizeKiB * 1024);
      }
      const podsPerCore = options.podsPerCore ?? 0;
      const pods = podsPerCore > 0 ? Math.min(info.numCores * podsPerCore, options.maxPods) : options.maxPods;
      capacity.pods = String(pods);
      if (ni.bootID !== '' && ni.bootID !== info.bootID) {
        options.recordEvent(
          'Warning',
          'Rebooted',
          `Node ${options.nodeName} has been rebooted, boot id: ${info.bootID}`,
        );
      }
      ni.bootID = info.bootID;
      const storage = options.capacity?.()['ephemeral-storage'];
      if (storage !== undefined)
        capacity['ephemeral-storage'] = formatResourceQuantity('ephemeral-storage', storage);
      extended = options.extendedResources?.() ?? {};
      for (const [k, v] of Object.entries(extended)) capacity[k] = formatResourceQuantity(k, v);
    }
    s.capacity = capacity;

    const allocatable: Record<string, string> = { ...s.allocatable };
    // Extended resources gone from capacity leave allocatable too.
    for (const k of Object.keys(allocatable)) {
      if (!(k in capacity) && isExtendedResourceName(k)) delete allocatable[k];
    }
    const reservation = options.allocatableReservation();
    const amounts: Record<string, number> = {};
    for (const [k, v] of Object.entries(capacity)) {
      amounts[k] = Math.max(0, amountOf(k, v) - (reservation[k] ?? 0));
    }
    for (const [k, v] of Object.entries(extended)) amounts[k] = v;
    // Memory given to hugepages is not allocatable as memory.
    for (const [k, v] of Object.entries(capacity)) {
      if (isHugePageResourceName(k)) amounts.memory = Math.max(0, (amounts.memory ?? 0) - amountOf(k, v));
    }
    for (const [k, v] of Object.entries(amounts)) allocatable[k] = formatResourceQuantity(k, v);
    s.allocatable = allocatable;
    // Upstream logs this and reports the zeros: the node still registers.
    if (infoError !== undefined)
      options.logger?.error({ err: String(infoError) }, 'Error getting machine info');
  };
}

/** Kernel and OS of the host, as cadvisor's VersionInfo gives them. @public */
export interface HostVersionInfo {
  /** `uname -r`. */
  readonly kernelVersion: string;
  /** `PRETTY_NAME` of /etc/os-release. */
  readonly osImage: string;
}

/** Options of {@link versionInfo}. @public */
export interface VersionInfoOptions {
  /** Throws when the host cannot be read. */
  readonly versionInfo: () => HostVersionInfo | Promise<HostVersionInfo>;
  /** The CRI Version call. */
  readonly runtimeVersion: () => Promise<RuntimeVersion>;
  /** e.g. `v1.34.0`. */
  readonly kubeletVersion: string;
}

/**
 * Upstream `VersionInfo`: kernel, OS image, `<runtime>://<version>` (`Unknown` when the runtime
 * does not answer), the kubelet version; kubeProxyVersion is cleared (DisableNodeKubeProxyVersion).
 *
 * @public
 */
export function versionInfo(options: VersionInfoOptions): Setter {
  let runtimeType = 'unknown';
  return async (node) => {
    let host: HostVersionInfo;
    try {
      host = await options.versionInfo();
    } catch (err) {
      throw new Error(`error getting version info: ${(err as Error).message ?? String(err)}`, { cause: err });
    }
    const ni = nodeInfo(node);
    ni.kernelVersion = host.kernelVersion;
    ni.osImage = host.osImage;
    let runtimeVersion = 'Unknown';
    try {
      const v = await options.runtimeVersion();
      runtimeType = v.runtimeName;
      runtimeVersion = v.runtimeVersion;
    } catch {
      // Upstream reports the version as Unknown and goes on.
    }
    ni.containerRuntimeVersion = `${runtimeType}://${runtimeVersion}`;
    ni.kubeletVersion = options.kubeletVersion;
    ni.kubeProxyVersion = '';
  };
}

/** Upstream `DaemonEndpoints`: the kubelet's port. @public */
export function daemonEndpoints(kubeletPort: number | (() => number)): Setter {
  return (node) => {
    const port = typeof kubeletPort === 'function' ? kubeletPort() : kubeletPort;
    status(node).daemonEndpoints = { kubeletEndpoint: { Port: port } };
  };
}

/** An image as the runtime lists it (CRI `Image`). @public */
export interface ImageInfo {
  readonly id: string;
  readonly repoTags: readonly string[];
  readonly repoDigests: readonly string[];
  /** Bytes. */
  readonly size: number;
}

/** Images reported in node status by default (upstream `nodeStatusMaxImages`). @public */
export const defaultNodeStatusMaxImages = 50;

/**
 * Upstream `Images`: the largest `maxImages` images (-1: all), largest first, each named by its
 * digests then its tags, at most five names.
 *
 * @public
 */
export function images(maxImages: number, imageList: () => Promise<readonly ImageInfo[]>): Setter {
  return async (node) => {
    const s = status(node);
    let list: ImageInfo[];
    try {
      list = [...(await imageList())];
    } catch (err) {
      delete s.images;
      throw new Error(`error getting image list: ${(err as Error).message ?? String(err)}`, { cause: err });
    }
    // Upstream's image cache order (ByImageSize): larger first, then by ID descending.
    list.sort((a, b) => b.size - a.size || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    if (maxImages > -1 && maxImages < list.length) list = list.slice(0, maxImages);
    const out = list.map((image) => ({
      names: [...image.repoDigests, ...image.repoTags].slice(0, maxNamesPerImageInNodeStatus),
      sizeBytes: image.size,
    }));
    if (out.length > 0) s.images = out;
    else delete s.images;
  };
}

/** Go's `GOOS` for this process. @public */
export function hostOperatingSystem(): string {
  return goOS();
}

/** Go's `GOARCH` for this process. @public */
export function hostArchitecture(): string {
  return goArch();
}

/** Upstream `GoRuntime`: operatingSystem and architecture. @public */
export function goRuntime(os = hostOperatingSystem(), arch = hostArchitecture()): Setter {
  return (node) => {
    const ni = nodeInfo(node);
    ni.operatingSystem = os;
    ni.architecture = arch;
  };
}

/** Options of {@link readyCondition}. Each error source returns its messages, none when fine. @public */
export interface ReadyConditionOptions {
  readonly now: () => number;
  /** Upstream `runtimeState.runtimeErrors`: runtime down or not ready, PLEG not healthy. */
  readonly runtimeErrors: () => readonly string[];
  /** Upstream `runtimeState.networkErrors`. */
  readonly networkErrors: () => readonly string[];
  /** Upstream `runtimeState.storageErrors`. */
  readonly storageErrors?: () => readonly string[];
  /** Upstream's host validation (`validateHostFunc`: the node IPs). */
  readonly hostErrors?: () => readonly string[];
  /** Upstream `shutdownManager.ShutdownStatus`. */
  readonly shutdownErrors?: () => readonly string[];
  /** Soft requirements not met (upstream `ContainerManager.Status().SoftRequirements`). */
  readonly softRequirements?: () => string | undefined;
  /** Whether ephemeral-storage capacity is required (LocalStorageCapacityIsolation, default true). */
  readonly localStorageCapacityIsolation?: boolean;
  readonly recordEvent: NodeEventFn;
}

/** Upstream's `utilerrors.NewAggregate(...).Error()`: one message, or `[a, b]` without repeats. @public */
export function aggregateMessage(messages: readonly string[]): string | undefined {
  const unique = [...new Set(messages)];
  if (unique.length === 0) return undefined;
  return unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
}

function conditions(node: Node): NodeCondition[] {
  const s = status(node);
  s.conditions ??= [];
  return s.conditions;
}

/**
 * Upstream `ReadyCondition`: True `KubeletReady` unless the runtime, network, storage, host or
 * shutdown report errors or cpu / memory / pods (/ ephemeral-storage) capacity is missing; then
 * False `KubeletNotReady` with the errors as message. A change of status records NodeReady or
 * NodeNotReady and moves lastTransitionTime.
 *
 * @public
 */
export function readyCondition(options: ReadyConditionOptions): Setter {
  return (node) => {
    const now = formatTime(options.now());
    const errs = [
      ...options.runtimeErrors(),
      ...options.networkErrors(),
      ...(options.storageErrors?.() ?? []),
      ...(options.hostErrors?.() ?? []),
      ...(options.shutdownErrors?.() ?? []),
    ];
    const required = ['cpu', 'memory', 'pods'];
    if (options.localStorageCapacityIsolation ?? true) required.push('ephemeral-storage');
    const capacity = node.status?.capacity ?? {};
    const missing = required.filter((r) => !(r in capacity));
    if (missing.length > 0) errs.push(`missing node capacity for resources: ${missing.join(', ')}`);
    const message = aggregateMessage(errs);
    const next: NodeCondition =
      message === undefined
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
            lastHeartbeatTime: now,
          }
        : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message, lastHeartbeatTime: now };
    const soft = options.softRequirements?.();
    if (soft) next.message = `${next.message}. WARNING: ${soft}`;
    const list = conditions(node);
    const i = list.findIndex((c) => c.type === 'Ready');
    if (i === -1) {
      next.lastTransitionTime = now;
      list.push(next);
      return;
    }
    const old = list[i]!;
    if (old.status === next.status) {
      if (old.lastTransitionTime !== undefined) next.lastTransitionTime = old.lastTransitionTime;
      list[i] = next;
      return;
    }
    next.lastTransitionTime = now;
    list[i] = next;
    if (next.status === 'True') options.recordEvent('Normal', 'NodeReady');
    else options.recordEvent('Normal', 'NodeNotReady');
  };
}

interface PressureTexts {
  readonly type: string;
  readonly trueReason: string;
  readonly trueMessage: string;
  readonly trueEvent: string;
  readonly falseReason: string;
  readonly falseMessage: string;
  readonly falseEvent: string;
}

function pressureCondition(
  texts: PressureTexts,
  now: () => number,
  underPressure: () => boolean,
  recordEvent: NodeEventFn,
): Setter {
  return (node) => {
    const time = formatTime(now());
    const list = conditions(node);
    let condition = list.find((c) => c.type === texts.type);
    // A new condition starts Unknown, so the first report of either status is a transition.
    if (!condition) {
      condition = { type: texts.type, status: 'Unknown' };
      list.push(condition);
    }
    condition.lastHeartbeatTime = time;
    if (underPressure()) {
      if (condition.status !== 'True') {
        condition.status = 'True';
        condition.reason = texts.trueReason;
        condition.message = texts.trueMessage;
        condition.lastTransitionTime = time;
        recordEvent('Normal', texts.trueEvent);
      }
    } else if (condition.status !== 'False') {
      condition.status = 'False';
      condition.reason = texts.falseReason;
      condition.message = texts.falseMessage;
      condition.lastTransitionTime = time;
      recordEvent('Normal', texts.falseEvent);
    }
  };
}

/** Upstream `MemoryPressureCondition`. @public */
export function memoryPressureCondition(
  now: () => number,
  underPressure: () => boolean,
  recordEvent: NodeEventFn,
): Setter {
  return pressureCondition(
    {
      type: 'MemoryPressure',
      trueReason: 'KubeletHasInsufficientMemory',
      trueMessage: 'kubelet has insufficient memory available',
      trueEvent: 'NodeHasInsufficientMemory',
      falseReason: 'KubeletHasSufficientMemory',
      falseMessage: 'kubelet has sufficient memory available',
      falseEvent: 'NodeHasSufficientMemory',
    },
    now,
    underPressure,
    recordEvent,
  );
}

/** Upstream `DiskPressureCondition`. @public */
export function diskPressureCondition(
  now: () => number,
  underPressure: () => boolean,
  recordEvent: NodeEventFn,
): Setter {
  return pressureCondition(
    {
      type: 'DiskPressure',
      trueReason: 'KubeletHasDiskPressure',
      trueMessage: 'kubelet has disk pressure',
      trueEvent: 'NodeHasDiskPressure',
      falseReason: 'KubeletHasNoDiskPressure',
      falseMessage: 'kubelet has no disk pressure',
      falseEvent: 'NodeHasNoDiskPressure',
    },
    now,
    underPressure,
    recordEvent,
  );
}

/** Upstream `PIDPressureCondition`. @public */
export function pidPressureCondition(
  now: () => number,
  underPressure: () => boolean,
  recordEvent: NodeEventFn,
): Setter {
  return pressureCondition(
    {
      type: 'PIDPressure',
      trueReason: 'KubeletHasInsufficientPID',
      trueMessage: 'kubelet has insufficient PID available',
      trueEvent: 'NodeHasInsufficientPID',
      falseReason: 'KubeletHasSufficientPID',
      falseMessage: 'kubelet has sufficient PID available',
      falseEvent: 'NodeHasSufficientPID',
    },
    now,
    underPressure,
    recordEvent,
  );
}

/**
 * Upstream `VolumesInUse`: the volume manager's volumes in use, once its reconciler has synced
 * the states found on disk (before that the field is left as it was).
 *
 * @public
 */
export function volumesInUse(synced: () => boolean, inUse: () => readonly string[]): Setter {
  return (node) => {
    if (!synced()) return;
    const list = [...inUse()];
    if (list.length > 0) status(node).volumesInUse = list;
    else delete status(node).volumesInUse;
  };
}
