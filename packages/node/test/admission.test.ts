import type { Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { admitPod, PodResourceUsage, podRequest } from '../src/index.js';

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

  it('decides the same with a kept PodResourceUsage as by summing activePods', () => {
    const withPort = (name: string, hostPort: number, requests: Record<string, string> = {}) =>
      pod(
        name,
        {},
        {
          containers: [
            { name: 'c', image: 'i', resources: { requests }, ports: [{ containerPort: 80, hostPort }] },
          ],
        },
      );
    const big = { cpu: 64, memory: 2 ** 40, pods: 1000 };
    const candidates = [
      pod('a', { cpu: '700m', memory: '1Gi' }),
      withPort('b', 8080, { cpu: '500m' }),
      pod('c', { memory: '2Gi' }),
      withPort('d', 8080),
      pod('e', { cpu: '900m' }),
      pod('f', { memory: '1500Mi' }),
      withPort('g', 9090, { cpu: '100m' }),
      pod('h'),
    ];
    for (const limits of [allocatable, { ...allocatable, pods: 5 }, big]) {
      const active: Pod[] = [];
      const usage = new PodResourceUsage();
      const reasons: (string | undefined)[] = [];
      for (const candidate of candidates) {
        const summed = admitPod({ pod: candidate, activePods: active, allocatable: limits });
        const kept = admitPod({ pod: candidate, activePods: active, allocatable: limits, usage });
        expect(kept).toEqual(summed);
        reasons.push(summed.reason);
        if (summed.admit) {
          active.push(candidate);
          usage.add(candidate);
        }
      }
      expect(usage.count).toBe(active.length);
      expect(usage.cpu).toBeCloseTo(active.reduce((s, p) => s + podRequest(p, 'cpu'), 0));
      if (limits === allocatable) {
        // cpu 2 and 4 GiB, 3 pods: a and b fit, c fits, then the pod count is full.
        expect(reasons).toEqual([
          undefined,
          undefined,
          undefined,
          'OutOfpods',
          'OutOfpods',
          'OutOfpods',
          'OutOfpods',
          'OutOfpods',
        ]);
      }
      if (limits === big) expect(reasons).toContain('HostPortConflict');
    }
  });
});
