import type { RuntimePod } from '@kubelet-kit/core';

/**
 * `/runningpods/`: the runtime's pods as v1 Pods, as upstream's `kubecontainer.Pod.ToAPIPod`
 * makes them: name, namespace and UID, and each container's name and image, nothing else.
 *
 * @internal
 */
export function runningPodsToApi(pods: readonly RuntimePod[]): object[] {
  return pods.map((p) => ({
    metadata: { name: p.name, namespace: p.namespace, uid: p.id, creationTimestamp: null },
    spec: { containers: p.containers.map((c) => ({ name: c.name, image: c.image, resources: {} })) },
    status: {},
  }));
}
