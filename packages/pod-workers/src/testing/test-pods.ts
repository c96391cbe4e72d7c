import { ConfigSourceAnnotationKey, FileSourceName, type Pod, type RuntimePod } from '@kubelet-kit/core';

/** A pod with a UID, name and namespace, and a 30 s grace period like upstream's `newNamedPod`. @public */
export function newNamedPod(uid: string, namespace: string, name: string, isStatic = false): Pod {
  return {
    metadata: {
      uid,
      namespace,
      name,
      ...(isStatic && { annotations: { [ConfigSourceAnnotationKey]: FileSourceName } }),
    },
    spec: { containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: 30 },
  };
}

/** A runtime-only pod with no containers. @public */
export function newRunningPod(uid: string, namespace: string, name: string): RuntimePod {
  return { id: uid, namespace, name, createdAt: 0, containers: [], sandboxes: [] };
}
