import {
  type Container,
  isStaticPod,
  type NodeAllocatable,
  type Pod,
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  quantityValue,
} from '@kubelet-kit/core';
import { findUntoleratedTaint, type NodeInfo, nodeOS, podMatchesNodeAffinity } from './node-info.js';
import type { SysctlAllowlist } from './sysctl.js';

/**
 * The outcome of admitting a pod (upstream `lifecycle.PodAdmitResult`).
 *
 * @public
 */
export interface PodAdmitResult {
  readonly admit: boolean;
  /** e.g. `OutOfpods`, `OutOfcpu`, `OutOfmemory`, `NodePorts`, `PodOSNotSupported`, `HostNetworkNotAllowed`. */
  readonly reason?: string;
  readonly message?: string;
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
  /** The node's name, labels and taints: node name, node affinity and NoExecute taints are checked against it. */
  readonly node?: NodeInfo;
  /** The sysctls pods may set (upstream's sysctl admit handler); without it sysctls are not checked. */
  readonly sysctls?: SysctlAllowlist;
}

/** The pod count, cpu and memory requests and host ports held by a set of admitted pods. */
export class PodResourceUsage {
  #count = 0;
  /** Whole millicores and bytes, summed pod by pod as upstream's `NodeInfo.Requested`. */
  #milliCPU = 0;
  #memory = 0;
  #ephemeralStorage = 0;
  readonly #scalar = new Map<string, number>();
  readonly #hostPorts = new Set<string>();

  constructor(pods: readonly Pod[] = []) {
    for (const pod of pods) this.add(pod);
  }

  /** Counts one more admitted pod. */
  add(pod: Pod): void {
    this.#count++;
    this.#milliCPU += podMilliCPU(pod);
    this.#memory += podMemory(pod);
    this.#ephemeralStorage += quantityValue(podRequest(pod, 'ephemeral-storage'));
    for (const name of scalarResourceNames(pod)) {
      this.#scalar.set(name, (this.#scalar.get(name) ?? 0) + quantityValue(podRequest(pod, name)));
    }
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

  /** Bytes of ephemeral storage requested. */
  get ephemeralStorage(): number {
    return this.#ephemeralStorage;
  }

  /** What is requested of a scalar resource (extended resource or hugepages). */
  scalar(name: string): number {
    return this.#scalar.get(name) ?? 0;
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

function requestOf(c: Container, name: string): number {
  const q = c.resources?.requests?.[name] ?? c.resources?.limits?.[name];
  return q === undefined ? 0 : parseQuantity(q);
}

/** `spec.resources` (PodLevelResources, beta and on by default in 1.34). */
function podLevelRequest(pod: Pod, name: string): Quantity | undefined {
  return pod.spec?.resources?.requests?.[name];
}

/**
 * The pod's effective request of a resource (upstream `resource.PodRequests`): the larger of the
 * sum over regular and sidecar containers and the largest regular init container plus the
 * sidecars started before it; a pod-level request replaces that; the overhead is added.
 */
export function podRequest(pod: Pod, name: string): number {
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

/**
 * Upstream `IsExtendedResourceName`: a name with a domain that is not `kubernetes.io` (nor
 * `requests.`-prefixed), e.g. `example.com/foo`.
 */
export function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/') || name.includes('kubernetes.io/') || name.startsWith('requests.')) return false;
  return /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/.test(
    `requests.${name}`,
  );
}

/** Upstream `IsScalarResourceName`: extended resources, hugepages and `kubernetes.io/`-prefixed ones. */
function isScalarResourceName(name: string): boolean {
  return (
    isExtendedResourceName(name) ||
    name.startsWith('hugepages-') ||
    name.includes('kubernetes.io/') ||
    name.startsWith('attachable-volumes-')
  );
}

/** The scalar resources a pod's containers or overhead name, in order of appearance. */
function scalarResourceNames(pod: Pod): string[] {
  const names = new Set<string>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const n of Object.keys(c.resources?.requests ?? {})) names.add(n);
    for (const n of Object.keys(c.resources?.limits ?? {})) names.add(n);
  }
  for (const n of Object.keys(pod.spec?.overhead ?? {})) names.add(n);
  return [...names].filter(isScalarResourceName);
}

function insufficient(name: string, requested: number, used: number, capacity: number): PodAdmitResult {
  // Upstream's InsufficientResourceError, reason `OutOf<resource>`.
  return {
    admit: false,
    reason: `OutOf${name}`,
    message: `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  };
}

/** Upstream's PredicateFailureError: the predicate's name is the reason. */
function predicateFailure(name: string, description: string): PodAdmitResult {
  return { admit: false, reason: name, message: `Predicate ${name} failed: ${description}` };
}

/**
 * Decides whether the node can run `pod` beside `activePods`, with the node-side rules of
 * upstream's admission: the host network / privileged policies, the sysctl allowlist, then the
 * predicate handler (OS, pod count and resource requests against allocatable, node affinity,
 * node name, host ports, NoExecute taints), the first failure being the answer.
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
  if (options.sysctls) {
    const sysctls = options.sysctls.admit(pod);
    if (!sysctls.admit) return sysctls;
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
  if (held.count + 1 > allocatable.pods) return insufficient('pods', 1, held.count, allocatable.pods);
  // Whole millicores and bytes, as upstream's fitsRequest; a float sum of 100m + 200m + 700m
  // would not fit one core.
  const amounts: Array<readonly [string, number, number, number]> = [
    ['cpu', podMilliCPU(pod), held.milliCPU, quantityMilliValue(allocatable.cpu)],
    ['memory', podMemory(pod), held.memory, quantityValue(allocatable.memory)],
  ];
  if (allocatable.ephemeralStorage !== undefined) {
    amounts.push([
      'ephemeral-storage',
      quantityValue(podRequest(pod, 'ephemeral-storage')),
      held.ephemeralStorage,
      quantityValue(allocatable.ephemeralStorage),
    ]);
  }
  const scalar = allocatable.scalarResources ?? {};
  for (const name of scalarResourceNames(pod)) {
    // Upstream's removeMissingExtendedResources: an extended resource the node does not list is
    // a cluster-level one, not the kubelet's to check.
    if (isExtendedResourceName(name) && !Object.hasOwn(scalar, name)) continue;
    amounts.push([name, quantityValue(podRequest(pod, name)), held.scalar(name), scalar[name] ?? 0]);
  }
  for (const [name, requested, used, capacity] of amounts) {
    if (requested > 0 && requested > capacity - used) return insufficient(name, requested, used, capacity);
  }
  const node = options.node;
  if (node && !podMatchesNodeAffinity(pod, node)) {
    return predicateFailure('NodeAffinity', "node(s) didn't match Pod's node affinity/selector");
  }
  const nodeName = pod.spec?.nodeName;
  if (node && nodeName && nodeName !== node.name) {
    return predicateFailure('NodeName', "node(s) didn't match the requested node name");
  }
  if (hostPorts(pod).some((p) => portConflict(held.hostPorts, p))) {
    return predicateFailure('NodePorts', "node(s) didn't have free ports for the requested pod ports");
  }
  // Static pods are not held to the node's taints (upstream generalFilter); only NoExecute counts.
  if (
    node &&
    !isStaticPod(pod) &&
    findUntoleratedTaint(node.taints, pod.spec?.tolerations ?? [], (t) => t.effect === 'NoExecute')
  ) {
    return predicateFailure('TaintToleration', "node(s) had taints that the pod didn't tolerate");
  }
  return { admit: true };
}
