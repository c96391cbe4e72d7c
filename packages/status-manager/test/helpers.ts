import type { ContainerStatus, Pod, PodSpec } from '@kubelet-kit/core';

// Container status builders named after upstream kubelet_pods_test.go's.

export function waiting(name: string, reason = ''): ContainerStatus {
  return { name, image: '', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason } } };
}

export function waitingWithLastTermination(name: string, exitCode = 0): ContainerStatus {
  return { ...waiting(name), lastState: { terminated: { exitCode } } };
}

export function running(name: string): ContainerStatus {
  return { name, image: '', imageID: '', ready: false, restartCount: 0, state: { running: {} } };
}

export function started(name: string): ContainerStatus {
  return { ...running(name), started: true };
}

export function succeeded(name: string): ContainerStatus {
  return {
    name,
    image: '',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode: 0 } },
  };
}

export function failed(name: string): ContainerStatus {
  return {
    name,
    image: '',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode: -1 } },
  };
}

export function ready(status: ContainerStatus): ContainerStatus {
  return { ...status, ready: true };
}

export function withID(status: ContainerStatus, id: string): ContainerStatus {
  return { ...status, containerID: id };
}

export function podWith(spec: PodSpec, extra: Partial<Pod> = {}): Pod {
  return {
    metadata: { name: 'foo', namespace: 'new', uid: 'uid-foo' },
    spec,
    ...extra,
  };
}

export function spec(
  restartPolicy: 'Always' | 'OnFailure' | 'Never',
  containers: string[],
  init: Array<string | { name: string; sidecar: true }> = [],
): PodSpec {
  return {
    restartPolicy,
    containers: containers.map((name) => ({ name, image: 'img' })),
    ...(init.length > 0
      ? {
          initContainers: init.map((c) =>
            typeof c === 'string'
              ? { name: c, image: 'img' }
              : { name: c.name, image: 'img', restartPolicy: 'Always' },
          ),
        }
      : {}),
  };
}
