import type { Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { admitPod, podRequest } from '../src/index.js';

const pod = (
  name: string,
  requests: Record<string, string> = {},
  extra: Partial<NonNullable<Pod['spec']>> = {},
): Pod => ({
  metadata: { name, namespace: 'default', uid: name },
  spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests } }], ...extra },
});
const allocatable = { cpu: 2, memory: 4 * 2 ** 30, pods: 3 };

describe('admitPod', () => {
  it('admits a pod that fits', () => {
    expect(admitPod({ pod: pod('a', { cpu: '500m' }), activePods: [], allocatable })).toEqual({
      admit: true,
    });
  });

  it('rejects past max pods with upstream reason and message', () => {
    const r = admitPod({ pod: pod('d'), activePods: [pod('a'), pod('b'), pod('c')], allocatable });
    expect(r.admit).toBe(false);
    expect(r.reason).toBe('OutOfpods');
    expect(r.message).toBe("Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3");
  });

  it('rejects cpu and memory requests beyond allocatable', () => {
    const cpu = admitPod({
      pod: pod('b', { cpu: '1500m' }),
      activePods: [pod('a', { cpu: '1' })],
      allocatable,
    });
    expect(cpu).toMatchObject({ admit: false, reason: 'OutOfcpu' });
    expect(cpu.message).toContain('requested: 1500m, used: 1000m, capacity: 2000m');
    const mem = admitPod({ pod: pod('b', { memory: '5Gi' }), activePods: [], allocatable });
    expect(mem).toMatchObject({ admit: false, reason: 'OutOfmemory' });
  });

  it('counts the largest init container against the sum of the others', () => {
    const p: Pod = {
      metadata: { name: 'x', uid: 'x' },
      spec: {
        initContainers: [
          { name: 'init', image: 'i', resources: { requests: { cpu: '3' } } },
          { name: 'side', image: 'i', restartPolicy: 'Always', resources: { requests: { cpu: '100m' } } },
        ],
        containers: [{ name: 'c', image: 'i', resources: { requests: { cpu: '1' } } }],
      },
    };
    expect(podRequest(p, 'cpu')).toBe(3);
    expect(admitPod({ pod: p, activePods: [], allocatable }).reason).toBe('OutOfcpu');
  });

  it('rejects a host port already taken', () => {
    const withPort = (name: string) =>
      pod(
        name,
        {},
        { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80, hostPort: 8080 }] }] },
      );
    expect(admitPod({ pod: withPort('b'), activePods: [withPort('a')], allocatable }).reason).toBe(
      'HostPortConflict',
    );
  });

  it('applies the host network and privileged policies', () => {
    expect(
      admitPod({
        pod: pod('h', {}, { hostNetwork: true }),
        activePods: [],
        allocatable,
        allowHostNetwork: false,
      }).reason,
    ).toBe('HostNetworkNotAllowed');
    const priv = pod(
      'p',
      {},
      { containers: [{ name: 'c', image: 'i', securityContext: { privileged: true } }] },
    );
    expect(admitPod({ pod: priv, activePods: [], allocatable, allowPrivileged: false }).reason).toBe(
      'PrivilegedNotAllowed',
    );
    expect(admitPod({ pod: priv, activePods: [], allocatable }).admit).toBe(true);
  });
});
