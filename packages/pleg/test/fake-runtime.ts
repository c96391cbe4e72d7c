import type {
  Runtime,
  RuntimeContainerState,
  RuntimeGetPodStatusOptions,
  RuntimePod,
  RuntimePodStatus,
  SandboxState,
} from '@kubelet-kit/core';

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

/** The two Runtime calls the PLEG makes, scripted by the test. */
export class FakeRuntime implements Pick<Runtime, 'getPods' | 'getPodStatus'> {
  pods: RuntimePod[] = [];
  /** Status (or error) per pod UID; a pod without one gets a status built from its list entry. */
  statuses = new Map<string, RuntimePodStatus | Error>();
  listError: Error | undefined;
  listCalls = 0;
  statusCalls: string[] = [];
  /** When set, getPods waits for it (to hold a relist in flight). */
  gate: Promise<void> | undefined;

  async getPods(all: boolean, signal?: AbortSignal): Promise<RuntimePod[]> {
    if (!all) throw new Error('the PLEG must list all pods');
    this.listCalls++;
    if (this.gate) await this.gate;
    signal?.throwIfAborted();
    if (this.listError) throw this.listError;
    return [...this.pods];
  }

  async getPodStatus(options: RuntimeGetPodStatusOptions): Promise<RuntimePodStatus> {
    this.statusCalls.push(options.uid);
    const s = this.statuses.get(options.uid);
    if (s instanceof Error) throw s;
    if (s) return s;
    const p = this.pods.find((x) => x.id === options.uid);
    return status(options.uid, {
      containers: (p?.containers ?? []).map((c) => [c.id.id, c.state] as [string, RuntimeContainerState]),
    });
  }
}
