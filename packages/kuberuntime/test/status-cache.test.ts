// status-cache.ts: which sandbox and container statuses getPodStatus may take without asking
// the runtime again, and when it forgets them.
import type { RuntimeContainerStatus, RuntimeSandboxStatus } from '@kubelet-kit/core';
import { ContainerState, PodSandboxState } from '@kubelet-kit/cri';
import { describe, expect, it } from 'vitest';
import { podUIDLabel } from '../src/index.js';
import { StatusCache } from '../src/status-cache.js';

const sandbox = (id: string) => ({ id, state: 'ready' }) as RuntimeSandboxStatus;
const container = (id: string) => ({ id: { type: 'containerd', id } }) as RuntimeContainerStatus;
const listed = (id: string, uid: string) => ({ id, labels: { [podUIDLabel]: uid } });

describe('StatusCache', () => {
  it('gives a status back only for the state it was read in', () => {
    const cache = new StatusCache();
    const s = sandbox('sb');
    const c = container('c');
    cache.rememberSandbox('sb', PodSandboxState.SANDBOX_READY, s);
    cache.rememberContainer('c', ContainerState.CONTAINER_RUNNING, c);
    expect(cache.sandboxStatus('sb', PodSandboxState.SANDBOX_READY)).toBe(s);
    expect(cache.sandboxStatus('sb', PodSandboxState.SANDBOX_NOTREADY)).toBeUndefined();
    expect(cache.containerStatus('c', ContainerState.CONTAINER_RUNNING)).toBe(c);
    expect(cache.containerStatus('c', ContainerState.CONTAINER_EXITED)).toBeUndefined();
    expect(cache.containerStatus('other', ContainerState.CONTAINER_RUNNING)).toBeUndefined();
  });

  it('does not keep a container in unknown state, whose status may still fill in', () => {
    const cache = new StatusCache();
    cache.rememberContainer('c', ContainerState.CONTAINER_UNKNOWN, container('c'));
    expect(cache.containerStatus('c', ContainerState.CONTAINER_UNKNOWN)).toBeUndefined();
  });

  it('forgets a removed container', () => {
    const cache = new StatusCache();
    cache.rememberContainer('c', ContainerState.CONTAINER_EXITED, container('c'));
    cache.forgetContainer('c');
    expect(cache.containerStatus('c', ContainerState.CONTAINER_EXITED)).toBeUndefined();
  });

  it("forgets what a pod's own listing no longer shows, and nothing of other pods", () => {
    const cache = new StatusCache();
    cache.rememberSandbox('sb1', PodSandboxState.SANDBOX_READY, sandbox('sb1'));
    cache.rememberContainer('c1', ContainerState.CONTAINER_EXITED, container('c1'));
    cache.rememberContainer('c2', ContainerState.CONTAINER_RUNNING, container('c2'));
    cache.rememberContainer('x1', ContainerState.CONTAINER_RUNNING, container('x1'));
    cache.pruneOfPod('pod-a', ['sb1', 'c1', 'c2']);
    cache.pruneOfPod('pod-b', ['x1']);
    // c1 was removed from pod-a since.
    cache.pruneOfPod('pod-a', ['sb1', 'c2']);
    expect(cache.containerStatus('c1', ContainerState.CONTAINER_EXITED)).toBeUndefined();
    expect(cache.containerStatus('c2', ContainerState.CONTAINER_RUNNING)).toBeDefined();
    expect(cache.sandboxStatus('sb1', PodSandboxState.SANDBOX_READY)).toBeDefined();
    expect(cache.containerStatus('x1', ContainerState.CONTAINER_RUNNING)).toBeDefined();
  });

  it('forgets what a full listing no longer shows', () => {
    const cache = new StatusCache();
    cache.rememberSandbox('sb1', PodSandboxState.SANDBOX_READY, sandbox('sb1'));
    cache.rememberSandbox('sb2', PodSandboxState.SANDBOX_READY, sandbox('sb2'));
    cache.rememberContainer('c1', ContainerState.CONTAINER_RUNNING, container('c1'));
    cache.rememberContainer('c2', ContainerState.CONTAINER_RUNNING, container('c2'));
    cache.pruneOfPod('pod-a', ['sb1', 'c1']);
    cache.pruneOfPod('pod-b', ['sb2', 'c2']);
    cache.prune([listed('sb1', 'pod-a')], [listed('c1', 'pod-a')]);
    expect(cache.sandboxStatus('sb1', PodSandboxState.SANDBOX_READY)).toBeDefined();
    expect(cache.sandboxStatus('sb2', PodSandboxState.SANDBOX_READY)).toBeUndefined();
    expect(cache.containerStatus('c1', ContainerState.CONTAINER_RUNNING)).toBeDefined();
    expect(cache.containerStatus('c2', ContainerState.CONTAINER_RUNNING)).toBeUndefined();
    // pod-b's IDs went with it: a status read again under its UID is not pruned by the old list.
    cache.rememberContainer('c2', ContainerState.CONTAINER_RUNNING, container('c2'));
    cache.pruneOfPod('pod-b', ['c2']);
    expect(cache.containerStatus('c2', ContainerState.CONTAINER_RUNNING)).toBeDefined();
  });

  it('leaves a cache no larger than the listing as it is, and prunes once it grows past it', () => {
    const cache = new StatusCache();
    cache.rememberSandbox('sb1', PodSandboxState.SANDBOX_READY, sandbox('sb1'));
    cache.rememberContainer('c1', ContainerState.CONTAINER_RUNNING, container('c1'));
    cache.pruneOfPod('pod-a', ['sb1', 'c1']);
    // pod-a went, pod-b came; its statuses are not read yet: one cached, one listed.
    const podB = { sandboxes: [listed('sb2', 'pod-b')], containers: [listed('c2', 'pod-b')] };
    cache.prune(podB.sandboxes, podB.containers, 1);
    expect(cache.sandboxStatus('sb1', PodSandboxState.SANDBOX_READY)).toBeDefined();
    cache.rememberSandbox('sb2', PodSandboxState.SANDBOX_READY, sandbox('sb2'));
    cache.rememberContainer('c2', ContainerState.CONTAINER_RUNNING, container('c2'));
    cache.pruneOfPod('pod-b', ['sb2', 'c2']);
    cache.prune(podB.sandboxes, podB.containers, 1);
    expect(cache.sandboxStatus('sb1', PodSandboxState.SANDBOX_READY)).toBeUndefined();
    expect(cache.containerStatus('c1', ContainerState.CONTAINER_RUNNING)).toBeUndefined();
    expect(cache.sandboxStatus('sb2', PodSandboxState.SANDBOX_READY)).toBeDefined();
    // pod-a's IDs went too: its old list no longer prunes a status read again under its UID.
    cache.rememberContainer('c1', ContainerState.CONTAINER_RUNNING, container('c1'));
    cache.pruneOfPod('pod-a', ['c1']);
    expect(cache.containerStatus('c1', ContainerState.CONTAINER_RUNNING)).toBeDefined();
  });
});
