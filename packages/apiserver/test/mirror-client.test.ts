import { ConfigHashAnnotationKey, ConfigSourceAnnotationKey, type Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { ApiserverMirrorClient, type MirrorPodApi } from '../src/index.js';

function staticPod(name: string, uid: string): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid,
      annotations: { [ConfigHashAnnotationKey]: uid, [ConfigSourceAnnotationKey]: 'file' },
    },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
    status: { phase: 'Pending' },
  };
}

describe('ApiserverMirrorClient', () => {
  const api = (createError?: { code: number }): MirrorPodApi =>
    ({
      readNode: async () => ({ metadata: { name: 'node-a', uid: 'node-uid' } }),
      createNamespacedPod: async () => {
        if (createError) throw Object.assign(new Error('create failed'), createError);
        return {};
      },
      deleteNamespacedPod: async () => ({}),
    }) as unknown as MirrorPodApi;

  it('counts a mirror that exists already (409) as made, and rejects other failures', async () => {
    const pod = staticPod('etcd-node-a', 'static-1');
    await expect(
      new ApiserverMirrorClient({ api: api({ code: 409 }), nodeName: 'node-a' }).createMirrorPod(pod),
    ).resolves.toBeUndefined();
    await expect(
      new ApiserverMirrorClient({ api: api({ code: 500 }), nodeName: 'node-a' }).createMirrorPod(pod),
    ).rejects.toThrow('create failed');
  });
});
