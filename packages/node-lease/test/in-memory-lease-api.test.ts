import { LeaseApiError } from '@kubelet-kit/core';
import { InMemoryLeaseApi } from '@kubelet-kit/node-lease/testing';
import { describe, expect, it } from 'vitest';

const lease = {
  metadata: { name: 'node-a', namespace: 'kube-node-lease' },
  spec: { holderIdentity: 'node-a' },
};

describe('InMemoryLeaseApi', () => {
  it('versions writes and refuses a stale update with Conflict', async () => {
    const api = new InMemoryLeaseApi();
    await expect(api.get('kube-node-lease', 'node-a')).rejects.toMatchObject({ code: 'NotFound' });
    const created = await api.create(lease);
    expect(created.metadata).toMatchObject({ resourceVersion: '1', uid: 'lease-uid-1' });
    await expect(api.create(lease)).rejects.toMatchObject({ code: 'AlreadyExists' });
    const updated = await api.update(created);
    expect(updated.metadata?.resourceVersion).toBe('2');
    await expect(api.update(created)).rejects.toMatchObject({ code: 'Conflict' });
    expect(api.calls.map((c) => c.error ?? c.method)).toEqual([
      'NotFound',
      'create',
      'AlreadyExists',
      'update',
      'Conflict',
    ]);
  });

  it('fails while down and for scripted faults', async () => {
    const api = new InMemoryLeaseApi();
    api.down = true;
    await expect(api.create(lease)).rejects.toBeInstanceOf(LeaseApiError);
    api.down = false;
    api.failNext('create', 'boom', 2);
    await expect(api.create(lease)).rejects.toThrow('boom');
    await expect(api.create(lease)).rejects.toThrow('boom');
    await expect(api.create(lease)).resolves.toBeDefined();
  });

  it('knows the Nodes it is told of', async () => {
    const api = new InMemoryLeaseApi();
    await expect(api.getNodeUid('node-a')).rejects.toMatchObject({ code: 'NotFound' });
    api.setNode('node-a', 'uid-1');
    await expect(api.getNodeUid('node-a')).resolves.toBe('uid-1');
  });
});
