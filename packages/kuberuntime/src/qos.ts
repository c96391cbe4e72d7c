import { type Container, isCriticalPod, type Pod, parseQuantity, type Quantity } from '@kubelet-kit/core';

// QoS class (upstream `pkg/apis/core/v1/helper/qos`) and the OOM score adjustment derived from
// it (`pkg/kubelet/qos/policy.go`).

/** The pod's QoS class. @internal */
export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** OOM score adjustments upstream gives each class. */
export const guaranteedOOMScoreAdj = -997;
export const besteffortOOMScoreAdj = 1000;
/** The value for node-critical pods. */
export const criticalPodOOMScoreAdj = -997;

const qosResources = ['cpu', 'memory'] as const;

/**
 * A container's requests with the API server's defaulting applied: a resource with a limit but
 * no request is requested at its limit. Pods read from files are not defaulted by anyone else.
 */
export function effectiveRequests(container: Container): Record<string, Quantity> {
  return { ...(container.resources?.limits ?? {}), ...(container.resources?.requests ?? {}) };
}

/** Upstream `GetPodQOS` (container-level resources; pod-level resources are not supported). @internal */
export function getPodQOS(pod: Pod): PodQOSClass {
  if (
    pod.status?.qosClass === 'Guaranteed' ||
    pod.status?.qosClass === 'Burstable' ||
    pod.status?.qosClass === 'BestEffort'
  ) {
    // Once computed, the class never changes (in-place resize keeps it).
    return pod.status.qosClass;
  }
  return computePodQOS(pod);
}

/** The QoS class from the spec alone. */
export function computePodQOS(pod: Pod): PodQOSClass {
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  for (const c of all) {
    const req = effectiveRequests(c);
    for (const name of qosResources) {
      const r = req[name];
      if (r !== undefined) {
        const v = parseQuantity(r);
        if (v > 0) requests.set(name, (requests.get(name) ?? 0) + v);
      }
    }
    let found = 0;
    for (const name of qosResources) {
      const l = c.resources?.limits?.[name];
      if (l !== undefined) {
        const v = parseQuantity(l);
        if (v > 0) {
          limits.set(name, (limits.get(name) ?? 0) + v);
          found++;
        }
      }
    }
    if (found !== qosResources.length) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, value] of requests) {
      if (Math.abs((limits.get(name) ?? Number.NaN) - value) > 1e-9) guaranteed = false;
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** Node-critical pods are never the OOM killer's choice. */
function isNodeCriticalPod(pod: Pod): boolean {
  return isCriticalPod(pod) && pod.spec?.priorityClassName === 'system-node-critical';
}

/** Upstream `GetContainerOOMScoreAdjust`. */
export function getContainerOOMScoreAdjust(pod: Pod, container: Container, memoryCapacity: number): number {
  if (isNodeCriticalPod(pod)) return criticalPodOOMScoreAdj;
  const qos = getPodQOS(pod);
  if (qos === 'Guaranteed') return guaranteedOOMScoreAdj;
  if (qos === 'BestEffort') return besteffortOOMScoreAdj;
  // Burstable: the more memory requested, the lower the score, but above guaranteed pods and
  // below best-effort ones.
  const memoryRequest = Math.ceil(parseQuantity(effectiveRequests(container).memory ?? '0'));
  const adjust = memoryCapacity > 0 ? 1000 - Math.trunc((1000 * memoryRequest) / memoryCapacity) : 1000;
  if (adjust < 1000 + guaranteedOOMScoreAdj) return 1000 + guaranteedOOMScoreAdj;
  if (adjust === besteffortOOMScoreAdj) return adjust - 1;
  return adjust;
}
