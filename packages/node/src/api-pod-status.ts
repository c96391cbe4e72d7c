import { isIPv4, isIPv6 } from 'node:net';
import type { Container, Pod, PodIP, PodStatus, RuntimePodStatus } from '@kubelet-kit/core';
import { getPodQOS } from '@kubelet-kit/kuberuntime';
import {
  generatePodConditions,
  getPhase,
  isPodPhaseTerminal,
  reconcilePodPhase,
} from '@kubelet-kit/status-manager';
import { convertToAPIContainerStatuses } from './container-status.js';
import type { ReasonCache } from './reason-cache.js';

/** Options of {@link generateAPIPodStatus}. */
export interface GenerateAPIPodStatusOptions {
  readonly pod: Pod;
  readonly podStatus: RuntimePodStatus;
  readonly podIsTerminal: boolean;
  /** The status manager's cached status of the pod, if any. */
  readonly cachedStatus: PodStatus | undefined;
  readonly reasonCache: ReasonCache;
  /** The node's IPs, primary first (hostIP, and the pod IPs of host-network pods). */
  readonly nodeIPs: readonly string[];
  /** Sets `started` and `ready` of each container (the probe manager's `updatePodStatus`). */
  readonly updateReadiness?: (pod: Pod, status: PodStatus) => void;
  /**
   * Whether a part of the agent wants the pod failed, and why (upstream's pod sync handlers'
   * `ShouldEvict`, e.g. the active deadline): the phase becomes Failed with that reason.
   */
  readonly shouldEvict?: (pod: Pod) => { readonly reason: string; readonly message: string } | undefined;
}

const sameFamily = (a: string, b: string): boolean => isIPv4(a) === isIPv4(b);

/**
 * At most one IP of each family, the node's family first (IPv4 when the node IP is unknown), as
 * upstream's `sortPodIPs`: the runtime may report any number of IPs in any order.
 */
function sortPodIPs(ips: readonly string[], nodeIPs: readonly string[]): string[] {
  const primaryIsV4 = nodeIPs[0] === undefined || isIPv4(nodeIPs[0]);
  const primary = ips.find((ip) => (primaryIsV4 ? isIPv4(ip) : isIPv6(ip)));
  const secondary = ips.find((ip) => (primaryIsV4 ? isIPv6(ip) : isIPv4(ip)));
  return [primary, secondary].filter((ip): ip is string => ip !== undefined);
}

/** The node's primary IP and the first IP of the other family, if any (upstream `GetNodeHostIPs`). */
function nodeHostIPs(nodeIPs: readonly string[]): string[] {
  const primary = nodeIPs[0];
  if (primary === undefined) return [];
  const secondary = nodeIPs.find((ip) => !sameFamily(ip, primary));
  return secondary === undefined ? [primary] : [primary, secondary];
}

function podIPsOf(pod: Pod, podStatus: RuntimePodStatus, nodeIPs: readonly string[]): string[] {
  const ips = sortPodIPs(podStatus.ips, nodeIPs);
  if (!pod.spec?.hostNetwork) return ips;
  // A host-network pod takes the node's IPs where the runtime reports none, and the node's
  // second family when the runtime reports one family only.
  const hostIPs = nodeHostIPs(nodeIPs);
  if (ips.length === 0 && hostIPs[0] !== undefined) ips.push(hostIPs[0]);
  const second = hostIPs[1];
  if (second !== undefined && ips.length === 1 && !sameFamily(ips[0]!, second)) ips.push(second);
  return ips;
}

/**
 * The API status of a pod from what the runtime reports, as upstream's `generateAPIPodStatus`
 * (pkg/kubelet/kubelet_pods.go): container statuses, phase (never leaving a terminal phase),
 * readiness from the probes, conditions, IPs and QoS class.
 */
export function generateAPIPodStatus(options: GenerateAPIPodStatusOptions): PodStatus {
  const { pod, podStatus, reasonCache } = options;
  const oldStatus = options.cachedStatus ?? pod.status ?? {};
  const spec = pod.spec;
  const initContainers = spec?.initContainers ?? [];
  const status: PodStatus = {
    qosClass: getPodQOS(pod),
    containerStatuses: convertToAPIContainerStatuses({
      pod,
      podStatus,
      previousStatuses: oldStatus.containerStatuses,
      containers: spec?.containers ?? [],
      hasInitContainers: initContainers.length > 0,
      isInitContainer: false,
      reasonCache,
    }),
  };
  if (initContainers.length > 0) {
    status.initContainerStatuses = convertToAPIContainerStatuses({
      pod,
      podStatus,
      previousStatuses: oldStatus.initContainerStatuses,
      containers: initContainers,
      hasInitContainers: true,
      isInitContainer: true,
      reasonCache,
    });
  }
  // Ephemeral containers: converted like init containers, as upstream does.
  const ephemeral = spec?.ephemeralContainers ?? [];
  if (ephemeral.length > 0) {
    status.ephemeralContainerStatuses = convertToAPIContainerStatuses({
      pod,
      podStatus,
      previousStatuses: oldStatus.ephemeralContainerStatuses,
      containers: ephemeral as Container[],
      hasInitContainers: initContainers.length > 0,
      isInitContainer: true,
      reasonCache,
    });
  }

  const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  const computed = getPhase(pod, all, options.podIsTerminal);
  const reconciled = reconcilePodPhase(computed, options.cachedStatus ?? pod.status, pod.status);
  status.phase = reconciled.phase;
  if (reconciled.reason) status.reason = reconciled.reason;
  if (reconciled.message) status.message = reconciled.message;
  const evict = options.shouldEvict?.(pod);
  if (evict) {
    status.phase = 'Failed';
    status.reason = evict.reason;
    status.message = evict.message;
    // Still no way out of the API server's terminal phase.
    const apiPhase = pod.status?.phase;
    if (isPodPhaseTerminal(apiPhase)) status.phase = apiPhase;
  }

  options.updateReadiness?.(pod, status);

  status.conditions = generatePodConditions({
    pod,
    phase: status.phase,
    initContainerStatuses: status.initContainerStatuses ?? [],
    containerStatuses: status.containerStatuses ?? [],
    runtimeStatus: podStatus,
    ...(options.cachedStatus ? { oldStatus: options.cachedStatus } : {}),
  });

  const hostIPs = nodeHostIPs(options.nodeIPs);
  if (hostIPs[0]) {
    status.hostIP = hostIPs[0];
    status.hostIPs = hostIPs.map((ip) => ({ ip }));
  }
  const ips = podIPsOf(pod, podStatus, options.nodeIPs);
  if (ips.length > 0) {
    status.podIP = ips[0];
    status.podIPs = ips.map((ip): PodIP => ({ ip }));
  } else if (oldStatus.podIP && podStatus.sandboxStatuses.length > 0) {
    // Keep the last known IPs while the sandbox is being torn down, as upstream does.
    status.podIP = oldStatus.podIP;
    if (oldStatus.podIPs) status.podIPs = oldStatus.podIPs;
  }
  if (oldStatus.startTime) status.startTime = oldStatus.startTime;
  else {
    // After an agent restart a static pod has no earlier status: its oldest sandbox says when it started.
    const firstSandbox = Math.min(...podStatus.sandboxStatuses.map((s) => s.createdAt).filter((t) => t > 0));
    if (Number.isFinite(firstSandbox))
      status.startTime = new Date(Math.floor(firstSandbox / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  }
  return status;
}
