import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  type Clock,
  type EventRecorder,
  type Logger,
  type Node,
  type NodeAllocatable,
  type NodeApi,
  type NodePressureProvider,
  QuantityParseError,
  quantityMilliValue,
  quantityValue,
  type RuntimeVersion,
  type Taint,
} from '@kubelet-kit/core';
import { type Threshold, thresholdQuantity } from '@kubelet-kit/eviction';
import {
  type HostVersionInfo,
  type HugePagesInfo,
  type ImageInfo,
  type MachineInfo,
  machineInfo as machineInfoSetter,
  NodeStatusManager,
  type ResourceAmounts,
} from '@kubelet-kit/nodestatus';

/**
 * The Kubernetes version whose kubelet this agent stands in for, reported as the Node's
 * `nodeInfo.kubeletVersion` (the control plane's version skew checks read it).
 *
 * @internal
 */
export const kubeletVersion = 'v1.34.0';

/** Upstream's default hard eviction thresholds that reserve capacity: memory.available<100Mi, nodefs.available<10%. */
const evictionHardMemoryBytes = 100 * 1024 * 1024;
const evictionHardNodefsFraction = 0.1;

/** The resources `--system-reserved` / `--kube-reserved` may name (upstream `ParseResourceList`). */
const reservableResources = new Set(['cpu', 'memory', 'ephemeral-storage', 'pid']);

/**
 * `--system-reserved` / `--kube-reserved` (`cpu=100m,memory=100Mi`, or the KubeletConfiguration
 * map) as amounts: cpu in millicores, the rest in whole units. Throws naming the flag and resource.
 *
 * @internal
 */
export function parseReservation(
  flag: string,
  list: Readonly<Record<string, string>> | undefined,
): ResourceAmounts {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(list ?? {})) {
    if (!reservableResources.has(name))
      throw new Error(`${flag}: cannot reserve ${JSON.stringify(name)} resource`);
    let amount: number;
    try {
      amount = name === 'cpu' ? quantityMilliValue(value) : quantityValue(value);
    } catch (err) {
      if (err instanceof QuantityParseError) {
        throw new Error(`${flag}: ${name}=${JSON.stringify(value)} is not a quantity`);
      }
      throw err;
    }
    if (amount < 0)
      throw new Error(`${flag}: resource quantity for ${JSON.stringify(name)} cannot be negative: ${value}`);
    out[name] = amount;
  }
  return out;
}

/** `--system-reserved=cpu=100m,memory=100Mi` as a map (upstream's `MapStringString` flag). @internal */
export function parseResourceListFlag(flag: string, values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of values.flatMap((v) => v.split(',')).map((v) => v.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new Error(`${flag}: malformed pair, expect string=string: ${JSON.stringify(item)}`);
    out[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return out;
}

function readTrimmed(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The hugepage pools of `dir` (/sys/kernel/mm/hugepages), as cadvisor reads them. */
function hugePagePools(dir: string): HugePagesInfo[] {
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const pools: HugePagesInfo[] = [];
  for (const e of entries.sort()) {
    const m = /^hugepages-(\d+)kB$/.exec(e);
    if (!m) continue;
    const numPages = Number(readTrimmed(path.join(dir, e, 'nr_hugepages')) ?? 0) || 0;
    pools.push({ pageSizeKiB: Number(m[1]), numPages });
  }
  return pools;
}

/** What cadvisor's MachineInfo would say of this host. */
function readMachineInfo(hugePagesDirectory: string): MachineInfo {
  return {
    numCores: os.cpus().length,
    memoryCapacity: os.totalmem(),
    machineID: readTrimmed('/etc/machine-id') ?? readTrimmed('/var/lib/dbus/machine-id') ?? '',
    // Readable by root only on most hosts: empty otherwise, as cadvisor leaves it.
    systemUUID: readTrimmed('/sys/class/dmi/id/product_uuid') ?? '',
    bootID: readTrimmed('/proc/sys/kernel/random/boot_id') ?? '',
    hugePages: hugePagePools(hugePagesDirectory),
  };
}

/** cadvisor's VersionInfo: the kernel release and /etc/os-release's PRETTY_NAME. */
function readVersionInfo(): HostVersionInfo {
  const release = readTrimmed('/etc/os-release') ?? readTrimmed('/usr/lib/os-release') ?? '';
  const m = /^PRETTY_NAME=(.*)$/m.exec(release);
  const pretty = m ? m[1]!.trim().replace(/^(["'])(.*)\1$/, '$2') : '';
  return { kernelVersion: os.release(), osImage: pretty || 'Linux' };
}

/** The capacity of the filesystem holding `dir` (or its nearest existing ancestor), bytes. */
function filesystemCapacity(dir: string): number {
  let d = dir;
  while (!fs.existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
  const st = fs.statfsSync(d);
  return st.blocks * st.bsize;
}

/** Options of {@link nodeResources}: the agent's flags about what the node offers. @internal */
export interface NodeResourcesOptions {
  readonly rootDirectory: string;
  readonly maxPods?: number | undefined;
  /** Ephemeral storage capacity, bytes; default the root directory's filesystem (less 10 % for eviction). */
  readonly ephemeralStorageBytes?: number | undefined;
  readonly extendedResources?: Readonly<Record<string, number>> | undefined;
  readonly systemReserved?: Readonly<Record<string, string>> | undefined;
  readonly kubeReserved?: Readonly<Record<string, string>> | undefined;
  readonly hugePagesDirectory?: string | undefined;
  /**
   * The hard eviction thresholds; their memory.available and nodefs.available amounts are
   * reserved (upstream `hardEvictionReservation`). Default upstream's: 100Mi and 10 %.
   */
  readonly hardEvictionThresholds?: readonly Threshold[] | undefined;
  /** Memory capacity for percentage thresholds; default the host's. */
  readonly memoryCapacityBytes?: number | undefined;
}

/**
 * The node's resources as the status setters and admission both see them: upstream reports
 * allocatable in the Node's status and admits pods against that same allocatable.
 *
 * @internal
 */
export interface NodeResources {
  readonly maxPods: number;
  readonly machineInfo: () => MachineInfo;
  readonly capacity: () => ResourceAmounts;
  readonly extendedResources: () => ResourceAmounts;
  /** system-reserved + kube-reserved + the hard eviction thresholds (upstream `GetNodeAllocatableReservation`). */
  readonly allocatableReservation: () => ResourceAmounts;
  /** Allocatable, as admission reads it. */
  readonly allocatable: NodeAllocatable;
}

/** Builds {@link NodeResources}; a bad reservation throws naming its flag. @internal */
export function nodeResources(options: NodeResourcesOptions): NodeResources {
  const systemReserved = parseReservation('--system-reserved', options.systemReserved);
  const kubeReserved = parseReservation('--kube-reserved', options.kubeReserved);
  const hugePagesDirectory = options.hugePagesDirectory ?? '/sys/kernel/mm/hugepages';
  const storage = options.ephemeralStorageBytes ?? filesystemCapacity(options.rootDirectory);
  const reservation: Record<string, number> = {};
  for (const r of [systemReserved, kubeReserved]) {
    for (const [k, v] of Object.entries(r)) reservation[k] = (reservation[k] ?? 0) + v;
  }
  let evictionMemory = evictionHardMemoryBytes;
  let evictionStorage = Math.floor(storage * evictionHardNodefsFraction);
  if (options.hardEvictionThresholds) {
    const amount = (signal: string, capacity: number) => {
      const t = options.hardEvictionThresholds
        ?.filter((x) => x.signal === signal && x.gracePeriodMs === 0)
        .at(-1);
      return t ? thresholdQuantity(t.value, capacity) : 0;
    };
    evictionMemory = amount('memory.available', options.memoryCapacityBytes ?? os.totalmem());
    evictionStorage = amount('nodefs.available', storage);
  }
  if (evictionMemory > 0) reservation.memory = (reservation.memory ?? 0) + evictionMemory;
  // A given --ephemeral-storage is what pods get: no eviction threshold is taken off it.
  if (options.ephemeralStorageBytes === undefined && evictionStorage > 0) {
    reservation['ephemeral-storage'] = (reservation['ephemeral-storage'] ?? 0) + evictionStorage;
  }
  const extended = { ...options.extendedResources };
  const resources = {
    maxPods: options.maxPods ?? 110,
    machineInfo: () => readMachineInfo(hugePagesDirectory),
    capacity: () => ({ 'ephemeral-storage': storage }),
    extendedResources: () => extended,
    allocatableReservation: () => reservation,
  };
  // Admission's allocatable is the status setter's, computed once at start.
  const scratch: Node = { metadata: { name: 'allocatable' } };
  void machineInfoSetter({
    nodeName: 'allocatable',
    ...resources,
    recordEvent: () => {},
  })(scratch);
  const a = scratch.status?.allocatable ?? {};
  const scalarResources: Record<string, number> = {};
  for (const [k, v] of Object.entries(a)) {
    if (k.startsWith('hugepages-') || k.includes('/')) scalarResources[k] = quantityValue(v);
  }
  const allocatable: NodeAllocatable = {
    cpu: quantityMilliValue(a.cpu ?? '0') / 1000,
    memory: quantityValue(a.memory ?? '0'),
    pods: quantityValue(a.pods ?? '0'),
    ...(a['ephemeral-storage'] !== undefined
      ? { ephemeralStorage: quantityValue(a['ephemeral-storage']) }
      : {}),
    scalarResources,
  };
  return { ...resources, allocatable };
}

/** What {@link createNodeStatus} needs from the agent. @internal */
export interface NodeStatusWiring {
  readonly nodeName: string;
  readonly api: NodeApi;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly registerNode: boolean;
  /** `--node-ip` as given; empty to find the node's IP. */
  readonly nodeIPs: readonly string[];
  readonly resources: NodeResources;
  readonly runtimeVersion: () => Promise<RuntimeVersion>;
  readonly listImages: () => Promise<readonly ImageInfo[]>;
  readonly runtimeErrors: () => readonly string[];
  readonly networkErrors: () => readonly string[];
  /** The PLEG's health error, undefined when healthy. */
  readonly plegError: () => string | undefined;
  readonly volumesSynced: () => boolean;
  /** The eviction manager's MemoryPressure, DiskPressure and PIDPressure verdicts. */
  readonly pressure?: NodePressureProvider;
  /** The kubelet's bound port, once serving. */
  readonly kubeletPort: () => number;
  readonly nodeStatusUpdateFrequencyMs?: number | undefined;
  readonly nodeStatusReportFrequencyMs?: number | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly recorder: EventRecorder;
}

/**
 * Node registration and status for an agent with an API server: the agent's runtime state,
 * PLEG, resources, images and port become the inputs of upstream's status setters.
 *
 * @internal
 */
export function createNodeStatus(w: NodeStatusWiring): NodeStatusManager {
  return new NodeStatusManager({
    nodeName: w.nodeName,
    api: w.api,
    labels: w.labels,
    taints: w.taints,
    registerNode: w.registerNode,
    ...(w.nodeStatusUpdateFrequencyMs !== undefined
      ? { nodeStatusUpdateFrequencyMs: w.nodeStatusUpdateFrequencyMs }
      : {}),
    ...(w.nodeStatusReportFrequencyMs !== undefined
      ? { nodeStatusReportFrequencyMs: w.nodeStatusReportFrequencyMs }
      : {}),
    inputs: {
      // The Hostname address is the node name (upstream kl.hostname: the override or the host's).
      hostname: w.nodeName,
      nodeIPs: w.nodeIPs,
      maxPods: w.resources.maxPods,
      machineInfo: w.resources.machineInfo,
      capacity: w.resources.capacity,
      extendedResources: w.resources.extendedResources,
      allocatableReservation: w.resources.allocatableReservation,
      versionInfo: readVersionInfo,
      runtimeVersion: w.runtimeVersion,
      kubeletVersion,
      kubeletPort: w.kubeletPort,
      imageList: w.listImages,
      ...(w.pressure ? { pressure: w.pressure } : {}),
      runtimeErrors: () => {
        const pleg = w.plegError();
        return [...w.runtimeErrors(), ...(pleg ? [`PLEG is not healthy: ${pleg}`] : [])];
      },
      networkErrors: w.networkErrors,
      // Upstream reports attachable volumes only; none of this agent's volume plugins attaches.
      volumesInUse: { synced: w.volumesSynced, inUse: () => [] },
    },
    clock: w.clock,
    logger: w.logger,
    recorder: w.recorder,
  });
}
