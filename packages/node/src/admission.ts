import { type Container, type Pod, parseQuantity } from '@kubelet-kit/core';

/** The outcome of admitting a pod (upstream `lifecycle.PodAdmitResult`). */
export interface PodAdmitResult {
  readonly admit: boolean;
  /** e.g. `OutOfpods`, `OutOfcpu`, `OutOfmemory`, `HostPortConflict`, `HostNetworkNotAllowed`. */
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
  #cpu = 0;
  #memory = 0;
  readonly #hostPorts = new Set<string>();

  constructor(pods: readonly Pod[] = []) {
    for (const pod of pods) this.add(pod);
  }

  /** Counts one more admitted pod. */
  add(pod: Pod): void {
    this.#count++;
    this.#cpu += podRequest(pod, 'cpu');
    this.#memory += podRequest(pod, 'memory');
    for (const port of hostPorts(pod)) this.#hostPorts.add(port);
  }

  /** Admitted pods. */
  get count(): number {
    return this.#count;
  }

  /** Cores. */
  get cpu(): number {
    return this.#cpu;
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

function requestOf(c: Container, name: 'cpu' | 'memory'): number {
  const q = c.resources?.requests?.[name] ?? c.resources?.limits?.[name];
  return q === undefined ? 0 : parseQuantity(q);
}

/**
 * The pod's effective request of a resource: the larger of the sum over regular and sidecar
 * containers and the largest request of any regular init container (upstream's rule).
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
  return Math.max(sum, initMax);
}

function hostPorts(pod: Pod): string[] {
  const ports: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) ports.push(`${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}:${p.hostPort}`);
    }
  }
  return ports;
}

function formatAmount(name: 'cpu' | 'memory', value: number): string {
  return name === 'cpu' ? `${Math.round(value * 1000)}m` : `${Math.round(value)}`;
}

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
  const held = options.usage ?? new PodResourceUsage(activePods);
  if (held.count + 1 > allocatable.pods) {
    return {
      admit: false,
      reason: 'OutOfpods',
      message: `Node didn't have enough resource: pods, requested: 1, used: ${held.count}, capacity: ${allocatable.pods}`,
    };
  }
  for (const name of ['cpu', 'memory'] as const) {
    const requested = podRequest(pod, name);
    if (requested === 0) continue;
    const used = held[name];
    const capacity = allocatable[name];
    if (used + requested > capacity) {
      return {
        admit: false,
        reason: `OutOf${name}`,
        message: `Node didn't have enough resource: ${name}, requested: ${formatAmount(name, requested)}, used: ${formatAmount(name, used)}, capacity: ${formatAmount(name, capacity)}`,
      };
    }
  }
  const wanted = hostPorts(pod);
  if (wanted.length > 0) {
    const taken = held.hostPorts;
    const clash = wanted.find((p) => taken.has(p));
    if (clash) {
      return {
        admit: false,
        reason: 'HostPortConflict',
        message: `Host port ${clash} is already in use by another pod`,
      };
    }
  }
  return { admit: true };
}
