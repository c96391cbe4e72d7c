import type { Pod, PodIP, PodStatus, RuntimePodStatus } from '@kubelet-kit/core';
import { getPodQOS } from '@kubelet-kit/kuberuntime';
import { generatePodConditions, getPhase, reconcilePodPhase } from '@kubelet-kit/status-manager';
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
}

function podIPsOf(pod: Pod, podStatus: RuntimePodStatus, nodeIPs: readonly string[]): string[] {
  if (pod.spec?.hostNetwork) return [...nodeIPs];
  return [...podStatus.ips];
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

  const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  const computed = getPhase(pod, all, options.podIsTerminal);
  const reconciled = reconcilePodPhase(computed, options.cachedStatus ?? pod.status, pod.status);
  status.phase = reconciled.phase;
  if (reconciled.reason) status.reason = reconciled.reason;
  if (reconciled.message) status.message = reconciled.message;

  options.updateReadiness?.(pod, status);

  status.conditions = generatePodConditions({
    pod,
    phase: status.phase,
    initContainerStatuses: status.initContainerStatuses ?? [],
    containerStatuses: status.containerStatuses ?? [],
    runtimeStatus: podStatus,
    ...(options.cachedStatus ? { oldStatus: options.cachedStatus } : {}),
  });

  const hostIP = options.nodeIPs[0];
  if (hostIP) {
    status.hostIP = hostIP;
    status.hostIPs = options.nodeIPs.map((ip) => ({ ip }));
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
