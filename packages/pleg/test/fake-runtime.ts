// What the tests' FakeRuntime (from @kubelet-kit/core/testing) serves: pods and statuses of
// one runtime type in one namespace.

import type { RuntimeContainerState, RuntimePod, RuntimePodStatus, SandboxState } from '@kubelet-kit/core';

export const runtimeType = 'fooRuntime';

export function container(id: string, state: RuntimeContainerState) {
  return { id: { type: runtimeType, id }, name: id, image: 'img', imageId: 'sha', hash: '0', state };
}

export function pod(
  id: string,
  containers: ReturnType<typeof container>[],
  sandboxes: ReturnType<typeof container>[] = [],
): RuntimePod {
  return { id, name: `name-${id}`, namespace: 'ns', createdAt: 0, containers, sandboxes };
}

export function status(
  id: string,
  opts: {
    ips?: string[];
    containers?: Array<[string, RuntimeContainerState, number?]>;
    sandboxes?: SandboxState[];
  } = {},
): RuntimePodStatus {
  return {
    id,
    name: `name-${id}`,
    namespace: 'ns',
    ips: opts.ips ?? [],
    containerStatuses: (opts.containers ?? []).map(([cid, state, exitCode]) => ({
      id: { type: runtimeType, id: cid },
      name: cid,
      state,
      createdAt: 0,
      startedAt: 0,
      finishedAt: 0,
      exitCode: exitCode ?? 0,
      image: 'img',
      imageId: 'sha',
      hash: '0',
      restartCount: 0,
      reason: '',
      message: '',
    })),
    sandboxStatuses: (opts.sandboxes ?? []).map((state, i) => ({
      id: `sb${i}`,
      name: `name-${id}`,
      namespace: 'ns',
      uid: id,
      attempt: 0,
      state,
      createdAt: 0,
      ips: [],
      hostNetwork: false,
      labels: {},
      annotations: {},
    })),
    timestamp: 0,
  };
}
