import type {
  PodSyncResult,
  Runtime,
  RuntimeCondition,
  RuntimeContainerStatus,
  RuntimeGarbageCollectOptions,
  RuntimeGetPodStatusOptions,
  RuntimeKillPodOptions,
  RuntimePod,
  RuntimePodStatus,
  RuntimeSandboxStatus,
  RuntimeSyncPodOptions,
  RuntimeVersion,
} from '@kubelet-kit/core';

/** The methods of `Runtime`, as {@link FakeRuntime.calls} names them. @public */
export type RuntimeMethod =
  | 'version'
  | 'status'
  | 'getPods'
  | 'syncPod'
  | 'killPod'
  | 'getPodStatus'
  | 'garbageCollect';

/** Options of {@link FakeRuntime}. @public */
export interface FakeRuntimeOptions {
  /** What `type()` returns. Default `fake`. */
  readonly runtimeType?: string;
}

/**
 * A `Runtime` that serves the pods and statuses a test configures and records every call
 * (upstream `container/testing.FakeRuntime`). It changes nothing by itself: a sync or kill is
 * recorded and answered with {@link FakeRuntime.syncResult} / {@link FakeRuntime.killResult};
 * the test updates `pods` and `statuses` to say what the runtime has afterwards.
 * @public
 */
export class FakeRuntime implements Runtime {
  readonly #type: string;
  /** Every pod the runtime has, alive or dead; `getPods(false)` narrows it to what runs. */
  pods: RuntimePod[] = [];
  /**
   * Status (or error to throw) per pod UID. A pod without one gets a status made from its
   * `pods` entry: every container with its state, every sandbox as ready when it runs.
   */
  statuses = new Map<string, RuntimePodStatus | Error>();
  /** When set, `getPods` throws it. */
  listError: Error | undefined;
  /** When set, `getPods` waits for it first (to hold a listing in flight). */
  gate: Promise<void> | undefined;
  versionInfo: RuntimeVersion = { runtimeName: 'fake', runtimeVersion: '0.0.0', runtimeApiVersion: 'v1' };
  conditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  /** What `syncPod` resolves with. */
  syncResult: PodSyncResult = { syncResults: [] };
  /** What `killPod` resolves with. */
  killResult: PodSyncResult = { syncResults: [] };
  /** When set, `garbageCollect` rejects with it. */
  gcError: Error | undefined;

  /** Every call in order, by method name (upstream `CalledFunctions`). */
  calls: RuntimeMethod[] = [];
  /** How many times `getPods` was called. */
  listCalls = 0;
  /** The UID of every `getPodStatus` call, in order. */
  statusCalls: string[] = [];
  /** The options of every `syncPod` call (upstream `StartedPods`, with the whole request). */
  syncPodCalls: RuntimeSyncPodOptions[] = [];
  /** The options of every `killPod` call (upstream `KilledPods`). */
  killPodCalls: RuntimeKillPodOptions[] = [];
  /** The options of every `garbageCollect` call. */
  gcCalls: RuntimeGarbageCollectOptions[] = [];

  constructor(options: FakeRuntimeOptions = {}) {
    this.#type = options.runtimeType ?? 'fake';
  }

  type(): string {
    return this.#type;
  }

  async version(signal?: AbortSignal): Promise<RuntimeVersion> {
    this.calls.push('version');
    signal?.throwIfAborted();
    return this.versionInfo;
  }

  async status(signal?: AbortSignal): Promise<readonly RuntimeCondition[]> {
    this.calls.push('status');
    signal?.throwIfAborted();
    return [...this.conditions];
  }

  async getPods(all: boolean, signal?: AbortSignal): Promise<RuntimePod[]> {
    this.calls.push('getPods');
    this.listCalls++;
    if (this.gate) await this.gate;
    signal?.throwIfAborted();
    if (this.listError) throw this.listError;
    if (all) return [...this.pods];
    // Upstream lists running containers and ready sandboxes only; a pod with neither is left out.
    return this.pods
      .map((p) => ({
        ...p,
        containers: p.containers.filter((c) => c.state === 'running'),
        sandboxes: p.sandboxes.filter((s) => s.state === 'running'),
      }))
      .filter((p) => p.containers.length > 0 || p.sandboxes.length > 0);
  }

  async syncPod(options: RuntimeSyncPodOptions): Promise<PodSyncResult> {
    this.calls.push('syncPod');
    this.syncPodCalls.push(options);
    options.signal?.throwIfAborted();
    return this.syncResult;
  }

  async killPod(options: RuntimeKillPodOptions): Promise<PodSyncResult> {
    this.calls.push('killPod');
    this.killPodCalls.push(options);
    options.signal?.throwIfAborted();
    return this.killResult;
  }

  async getPodStatus(options: RuntimeGetPodStatusOptions): Promise<RuntimePodStatus> {
    this.calls.push('getPodStatus');
    this.statusCalls.push(options.uid);
    options.signal?.throwIfAborted();
    const configured = this.statuses.get(options.uid);
    if (configured instanceof Error) throw configured;
    if (configured) return configured;
    return this.#statusFromPod(options);
  }

  async garbageCollect(options: RuntimeGarbageCollectOptions): Promise<void> {
    this.calls.push('garbageCollect');
    this.gcCalls.push(options);
    options.signal?.throwIfAborted();
    if (this.gcError) throw this.gcError;
  }

  #statusFromPod(options: RuntimeGetPodStatusOptions): RuntimePodStatus {
    const pod = this.pods.find((p) => p.id === options.uid);
    const containerStatuses = (pod?.containers ?? []).map(
      (c): RuntimeContainerStatus => ({
        id: c.id,
        name: c.name,
        state: c.state,
        createdAt: 0,
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        image: c.image,
        imageId: c.imageId,
        hash: c.hash,
        restartCount: 0,
        reason: '',
        message: '',
      }),
    );
    const sandboxStatuses = (pod?.sandboxes ?? []).map(
      (s): RuntimeSandboxStatus => ({
        id: s.id.id,
        name: pod?.name ?? options.name,
        namespace: pod?.namespace ?? options.namespace,
        uid: options.uid,
        attempt: 0,
        state: s.state === 'running' ? 'ready' : 'notready',
        createdAt: pod?.createdAt ?? 0,
        ips: [],
        hostNetwork: false,
        labels: {},
        annotations: {},
      }),
    );
    return {
      id: options.uid,
      name: pod?.name ?? options.name,
      namespace: pod?.namespace ?? options.namespace,
      ips: [],
      containerStatuses,
      sandboxStatuses,
      timestamp: 0,
    };
  }
}
