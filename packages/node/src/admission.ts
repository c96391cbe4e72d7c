import {
  type Container,
  type Pod,
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  quantityValue,
} from '@kubelet-kit/core';

/** The outcome of admitting a pod (upstream `lifecycle.PodAdmitResult`). */
export interface PodAdmitResult {
  readonly admit: boolean;
  /** e.g. `OutOfpods`, `OutOfcpu`, `OutOfmemory`, `NodePorts`, `PodOSNotSupported`, `HostNetworkNotAllowed`. */
  readonly reason?: string;
  readonly message?: string;
}

/** What the node can give pods. */
export interface NodeAllocatable {
  /** Cores. */
  readonly cpu: number;
  /** Bytes. */
  readonly memory: number;
  readonly pods: number;
}

/** Options of {@link admitPod}. */
export interface AdmitPodOptions {
  readonly pod: Pod;
  /** The pods already admitted and not terminated. */
  readonly activePods: readonly Pod[];
  readonly allocatable: NodeAllocatable;
  /** Whether pods may use the host's network namespace (upstream's --host-network-sources policy). */
  readonly allowHostNetwork?: boolean;
  /** Whether containers may run privileged (upstream's --allow-privileged, default true). */
  readonly allowPrivileged?: boolean;
  /**
   * What `activePods` hold, kept by a caller that admits many pods in a row; without it each
   * admission sums every active pod's requests and host ports again (quadratic in a batch).
   */
  readonly usage?: PodResourceUsage;
}

/** The pod count, cpu and memory requests and host ports held by a set of admitted pods. */
export class PodResourceUsage {
  #count = 0;
  /** Whole millicores and bytes, summed pod by pod as upstream's `NodeInfo.Requested`. */
  #milliCPU = 0;
  #memory = 0;
  readonly #hostPorts = new Set<string>();

  constructor(pods: readonly Pod[] = []) {
    for (const pod of pods) this.add(pod);
  }

  /** Counts one more admitted pod. */
  add(pod: Pod): void {
    this.#count++;
    this.#milliCPU += podMilliCPU(pod);
    this.#memory += podMemory(pod);
    for (const p of hostPorts(pod)) this.#hostPorts.add(hostPortKey(p.protocol, p.hostIP, p.port));
  }

  /** Admitted pods. */
  get count(): number {
    return this.#count;
  }

  /** Cores. */
  get cpu(): number {
    return this.#milliCPU / 1000;
  }

  /** Whole millicores, as the fit check compares them. */
  get milliCPU(): number {
    return this.#milliCPU;
  }

  /** Bytes. */
  get memory(): number {
    return this.#memory;
  }

  /** `<protocol>/<host IP>:<port>` of every host port in use. */
  get hostPorts(): ReadonlySet<string> {
    return this.#hostPorts;
  }
}

/**
 * Upstream `HostPortInfo.CheckConflict`: 0.0.0.0 clashes with the same protocol and port on any
 * address, another address with itself and with 0.0.0.0.
 */
function portConflict(taken: ReadonlySet<string>, { protocol, hostIP, port }: HostPort): boolean {
  if (hostIP !== bindAllHostIP) {
    return (
      taken.has(hostPortKey(protocol, bindAllHostIP, port)) || taken.has(hostPortKey(protocol, hostIP, port))
    );
  }
  // The port is the key's last segment, so the suffix matches it whatever the address.
  for (const key of taken) {
    if (key.startsWith(`${protocol}/`) && key.endsWith(`:${port}`)) return true;
  }
  return false;
}

function requestOf(c: Container, name: 'cpu' | 'memory'): number {
  const q = c.resources?.requests?.[name] ?? c.resources?.limits?.[name];
  return q === undefined ? 0 : parseQuantity(q);
}

/** `spec.resources` (PodLevelResources, beta and on by default in 1.34), newer than our API types. */
function podLevelRequest(pod: Pod, name: 'cpu' | 'memory'): Quantity | undefined {
  const spec = pod.spec as { resources?: { requests?: Record<string, Quantity> } } | undefined;
  return spec?.resources?.requests?.[name];
}

/**
 * The pod's effective request of a resource (upstream `resource.PodRequests`): the larger of the
 * sum over regular and sidecar containers and the largest regular init container plus the
 * sidecars started before it; a pod-level request replaces that; the overhead is added.
 */
export function podRequest(pod: Pod, name: 'cpu' | 'memory'): number {
  let sum = 0;
  let initMax = 0;
  let sidecars = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      sidecars += requestOf(c, name);
      sum += requestOf(c, name);
    } else {
      initMax = Math.max(initMax, sidecars + requestOf(c, name));
    }
  }
  for (const c of pod.spec?.containers ?? []) sum += requestOf(c, name);
  const podLevel = podLevelRequest(pod, name);
  const request = podLevel === undefined ? Math.max(sum, initMax) : parseQuantity(podLevel);
  const overhead = pod.spec?.overhead?.[name];
  return overhead === undefined ? request : request + parseQuantity(overhead);
}

/** Upstream compares integers: the pod's cpu request as `Quantity.MilliValue` (rounded up)... */
function podMilliCPU(pod: Pod): number {
  return quantityMilliValue(podRequest(pod, 'cpu'));
}

/** ...and its memory request as `Quantity.Value`, in bytes. */
function podMemory(pod: Pod): number {
  return quantityValue(podRequest(pod, 'memory'));
}

const bindAllHostIP = '0.0.0.0';

function hostPortKey(protocol: string, hostIP: string, port: number): string {
  return `${protocol}/${hostIP}:${port}`;
}

interface HostPort {
  readonly protocol: string;
  readonly hostIP: string;
  readonly port: number;
}

/**
 * Upstream `GetHostPorts`: the host ports of regular and sidecar containers (an init container
 * that runs to completion holds none), an empty host IP meaning 0.0.0.0 and protocol TCP.
 */
function hostPorts(pod: Pod): HostPort[] {
  const ports: HostPort[] = [];
  const sidecars = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  for (const c of [...sidecars, ...(pod.spec?.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort && p.hostPort > 0) {
        ports.push({ protocol: p.protocol || 'TCP', hostIP: p.hostIP || bindAllHostIP, port: p.hostPort });
      }
    }
  }
  return ports;
}

/** The OS this agent runs on, named as Go's `runtime.GOOS`. */
const nodeOS = process.platform === 'win32' ? 'windows' : process.platform;

/**
 * Decides whether the node can run `pod` beside `activePods`, with the node-side rules of
 * upstream's admission (pod count, cpu and memory requests against allocatable, host ports, and
 * the host network / privileged policies).
 */
export function admitPod(options: AdmitPodOptions): PodAdmitResult {
  const { pod, activePods, allocatable } = options;
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  if (pod.spec?.hostNetwork && options.allowHostNetwork === false) {
    return {
      admit: false,
      reason: 'HostNetworkNotAllowed',
      message: 'Pod uses the host network, which this node does not allow',
    };
  }
  if (options.allowPrivileged === false) {
    const privileged = containers.find((c) => c.securityContext?.privileged);
    if (privileged) {
      return {
        admit: false,
        reason: 'PrivilegedNotAllowed',
        message: `Container ${privileged.name} is privileged, which this node does not allow`,
      };
    }
  }
  // Upstream's predicate handler checks the OS first: no eviction would make these fit.
  const osLabel = pod.metadata?.labels?.['kubernetes.io/os'];
  if (osLabel !== undefined && osLabel !== nodeOS) {
    return {
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  }
  const osName = pod.spec?.os?.name;
  if (osName !== undefined && osName !== nodeOS) {
    return {
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    };
  }
  const held = options.usage ?? new PodResourceUsage(activePods);
  if (held.count + 1 > allocatable.pods) {
    return {
      admit: false,
      reason: 'OutOfpods',
      message: `Node didn't have enough resource: pods, requested: 1, used: ${held.count}, capacity: ${allocatable.pods}`,
    };
  }
  // Whole millicores and bytes, as upstream's fitsRequest; a float sum of 100m + 200m + 700m
  // would not fit one core.
  const amounts = [
    ['cpu', podMilliCPU(pod), held.milliCPU, quantityMilliValue(allocatable.cpu)],
    ['memory', podMemory(pod), held.memory, quantityValue(allocatable.memory)],
  ] as const;
  for (const [name, requested, used, capacity] of amounts) {
    if (requested > 0 && requested > capacity - used) {
      return {
        admit: false,
        reason: `OutOf${name}`,
        message: `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
      };
    }
  }
  if (hostPorts(pod).some((p) => portConflict(held.hostPorts, p))) {
    // Upstream's NodePorts predicate: the reason is the plugin's name.
    return {
      admit: false,
      reason: 'NodePorts',
      message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    };
  }
  return { admit: true };
}
