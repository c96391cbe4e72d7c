// The benchmark pods: one busybox container running `sleep`, pod networking (no hostNetwork).
export const busyboxImage = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';

/** A static pod manifest (a v1 Pod object) named `<prefix>-<i>`. */
export function sleepPodManifest(i, prefix = 'bench') {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${prefix}-${i}`, namespace: 'default' },
    spec: {
      // A short grace period keeps the clean-up between phases quick; it does not affect start-up.
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'sleep',
          image: busyboxImage,
          imagePullPolicy: 'IfNotPresent',
          command: ['sleep', '3600'],
        },
      ],
    },
  };
}
