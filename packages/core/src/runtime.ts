import type { Secret } from 'kubernetes-types/core/v1.js';
import type { Backoff } from './backoff.js';
import type { Pod } from './core-v1.js';
import { CodedError } from './errors.js';

// The runtime-neutral model of what runs on the node (upstream `pkg/kubelet/container`), so the
// managers above the runtime never see CRI types.

/** A container's state as the runtime reports it (upstream `kubecontainer.State`). @public */
export type RuntimeContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** A sandbox's state (CRI SANDBOX_READY / SANDBOX_NOTREADY). @public */
export type SandboxState = 'ready' | 'notready';

/** A container ID with the runtime type that owns it; printed as `type://id`. @public */
export interface ContainerID {
  readonly type: string;
  readonly id: string;
}

/** `containerd://abc` for `{type: 'containerd', id: 'abc'}`. @public */
export function formatContainerID(cid: ContainerID): string {
  return `${cid.type}://${cid.id}`;
}

/** Parses `type://id`; a string without `://` is taken as a bare ID of an unknown type. @public */
export function parseContainerID(value: string): ContainerID {
  const at = value.indexOf('://');
  if (at < 0) return { type: '', id: value };
  return { type: value.slice(0, at), id: value.slice(at + 3) };
}

/** One container as the runtime reports it (upstream `kubecontainer.Status`). Times are epoch ms. @public */
export interface RuntimeContainerStatus {
  readonly id: ContainerID;
  readonly name: string;
  readonly state: RuntimeContainerState;
  readonly createdAt: number;
  /** 0 when the container never started. */
  readonly startedAt: number;
  /** 0 when the container has not finished. */
  readonly finishedAt: number;
  readonly exitCode: number;
  /** The image as the pod spec named it. */
  readonly image: string;
  /** The image ID the runtime resolved it to. */
  readonly imageId: string;
  readonly imageRef?: string;
  /** The container hash recorded at creation (`io.kubernetes.container.hash`), lowercase hex. */
  readonly hash: string;
  readonly restartCount: number;
  readonly reason: string;
  readonly message: string;
  /** The identity of the container's first process, when the runtime reports it (CRI `user`). */
  readonly user?: RuntimeContainerUser;
}

/** The user a container's first process runs as (upstream `kubecontainer.ContainerUser`). @public */
export interface RuntimeContainerUser {
  readonly linux?: {
    readonly uid: number;
    readonly gid: number;
    readonly supplementalGroups: readonly number[];
  };
}

/** One pod sandbox as the runtime reports it. Times are epoch ms. @public */
export interface RuntimeSandboxStatus {
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly attempt: number;
  readonly state: SandboxState;
  readonly createdAt: number;
  /** Primary IP first; empty for host-network pods and sandboxes without networking. */
  readonly ips: readonly string[];
  /** True when the sandbox shares the host's network namespace. */
  readonly hostNetwork: boolean;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/**
 * Everything the runtime knows of one pod (upstream `kubecontainer.PodStatus`): all containers,
 * alive or dead, and all sandboxes, newest first.
 * @public
 */
export interface RuntimePodStatus {
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  /** The IPs of the newest ready sandbox; primary first. */
  readonly ips: readonly string[];
  readonly containerStatuses: readonly RuntimeContainerStatus[];
  readonly sandboxStatuses: readonly RuntimeSandboxStatus[];
  /** When the runtime was asked (epoch ms). */
  readonly timestamp: number;
}

/** A container or sandbox of a running pod (upstream `kubecontainer.Container`). @public */
export interface RuntimeContainer {
  readonly id: ContainerID;
  readonly name: string;
  readonly image: string;
  readonly imageId: string;
  readonly hash: string;
  readonly state: RuntimeContainerState;
}

/** A pod as a list of the runtime's containers and sandboxes (upstream `kubecontainer.Pod`). @public */
export interface RuntimePod {
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  /** Epoch ms of the newest sandbox's creation. */
  readonly createdAt: number;
  readonly containers: readonly RuntimeContainer[];
  readonly sandboxes: readonly RuntimeContainer[];
}

/** The step a sync result is about (upstream `kubecontainer.SyncAction`). @public */
export type SyncAction =
  | 'StartContainer'
  | 'KillContainer'
  | 'SetupNetwork'
  | 'TeardownNetwork'
  | 'InitContainer'
  | 'CreatePodSandbox'
  | 'ConfigPodSandbox'
  | 'KillPodSandbox';

/** The outcome of one step of a sync (upstream `kubecontainer.SyncResult`). @public */
export interface SyncResult {
  readonly action: SyncAction;
  /** A container name, a pod full name or sandbox ID: what the action was about. */
  readonly target: string;
  /** A reason code such as `CrashLoopBackOff` or `ErrImagePull`; undefined on success. */
  readonly error?: string;
  readonly message: string;
}

/** All steps of one `Runtime.syncPod` or `killPod` (upstream `kubecontainer.PodSyncResult`). @public */
export interface PodSyncResult {
  readonly syncResults: readonly SyncResult[];
  /** An error outside any one step (for example the status could not be read). */
  readonly syncError?: Error;
  /**
   * The pod's runtime status right after the sync, when the runtime can tell it without listing
   * the pod again: set only by a sync that made or started something, removed and stopped
   * nothing, and succeeded in every step. It is the status the sync was given plus what the sync
   * made, each new object as the runtime reported it after the change. Undefined otherwise.
   */
  readonly podStatus?: RuntimePodStatus;
}

/** Reason codes a runtime reports in sync results and container statuses (upstream's strings). @public */
export const ContainerReasons = {
  ErrImagePull: 'ErrImagePull',
  ImagePullBackOff: 'ImagePullBackOff',
  ErrImageNeverPull: 'ErrImageNeverPull',
  ErrImageInspect: 'ImageInspectError',
  InvalidImageName: 'InvalidImageName',
  CrashLoopBackOff: 'CrashLoopBackOff',
  CreateContainerConfigError: 'CreateContainerConfigError',
  CreateContainerError: 'CreateContainerError',
  RunContainerError: 'RunContainerError',
  PreStartHookError: 'PreStartHookError',
  PostStartHookError: 'PostStartHookError',
  FailedPostStartHook: 'FailedPostStartHook',
  FailedPreStopHook: 'FailedPreStopHook',
  KillContainerError: 'KillContainerError',
  KillPodSandboxError: 'KillPodSandboxError',
  CreatePodSandboxError: 'CreatePodSandboxError',
  ConfigPodSandboxError: 'ConfigPodSandboxError',
  ContainerStatusUnknown: 'ContainerStatusUnknown',
} as const;

/** Steps whose errors are just "waiting" (a backoff), not failures of the sync. */
const backoffReasons: ReadonlySet<string> = new Set([
  ContainerReasons.CrashLoopBackOff,
  ContainerReasons.ImagePullBackOff,
]);

/** An error that summarizes a pod sync result's failures. @public */
export class PodSyncError extends Error {
  readonly code = 'PodSyncError';
  constructor(
    readonly failures: readonly SyncResult[],
    override readonly cause?: Error,
  ) {
    super(
      cause
        ? cause.message
        : failures
            .map((f) => `failed to "${f.action}" for "${f.target}" with ${f.error}: "${f.message}"`)
            .join(', '),
    );
    this.name = 'PodSyncError';
  }

  /** True when every failure is a backoff wait (which upstream does not treat as a sync error). */
  get onlyBackoff(): boolean {
    return !this.cause && this.failures.every((f) => f.error !== undefined && backoffReasons.has(f.error));
  }
}

/** The combined error of a pod sync result, or undefined when every step succeeded. @public */
export function podSyncResultError(result: PodSyncResult): PodSyncError | undefined {
  const failures = result.syncResults.filter((r) => r.error !== undefined);
  if (!result.syncError && failures.length === 0) return undefined;
  return new PodSyncError(failures, result.syncError);
}

/** Container garbage collection limits (upstream `kubecontainer.GCPolicy`). @public */
export interface ContainerGCPolicy {
  /** Minimum age (ms) at which a dead container can be collected. */
  readonly minAgeMs: number;
  /** Dead containers kept per (pod, container name); negative means no limit. */
  readonly maxPerPodContainer: number;
  /** Dead containers kept in all; negative means no limit. */
  readonly maxContainers: number;
}

/** The version a runtime reports. @public */
export interface RuntimeVersion {
  readonly runtimeName: string;
  readonly runtimeVersion: string;
  readonly runtimeApiVersion: string;
}

/** A condition of the runtime (RuntimeReady, NetworkReady). @public */
export interface RuntimeCondition {
  readonly type: string;
  readonly status: boolean;
  readonly reason: string;
  readonly message: string;
}

/** Options of {@link Runtime.syncPod}. @public */
export interface RuntimeSyncPodOptions {
  readonly pod: Pod;
  readonly podStatus: RuntimePodStatus;
  readonly pullSecrets: readonly Secret[];
  /** The crash-loop backoff, keyed per pod, container and hash. */
  readonly backOff: Backoff;
  readonly signal?: AbortSignal;
}

/** Options of {@link Runtime.killPod}. @public */
export interface RuntimeKillPodOptions {
  /** The desired pod, when it is still known; grace periods come from it. */
  readonly pod?: Pod;
  readonly runningPod: RuntimePod;
  /** Overrides every other grace period, in seconds. */
  readonly gracePeriodOverride?: number;
  readonly signal?: AbortSignal;
}

/** Options of {@link Runtime.getPodStatus}. @public */
export interface RuntimeGetPodStatusOptions {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  readonly signal?: AbortSignal;
}

/** Options of {@link Runtime.garbageCollect}. @public */
export interface RuntimeGarbageCollectOptions {
  readonly policy: ContainerGCPolicy;
  /** True once every pod source has sent its first SET: only then are unknown pods' sandboxes removed. */
  readonly allSourcesReady: boolean;
  readonly evictNonDeletedPods: boolean;
  readonly signal?: AbortSignal;
}

/**
 * The container runtime as the kubelet drives it (upstream `kubecontainer.Runtime`, the parts we use).
 * @public
 */
export interface Runtime {
  /** The runtime's type, e.g. `containerd`, used in container IDs. */
  type(): string;
  version(signal?: AbortSignal): Promise<RuntimeVersion>;
  /** The runtime's conditions (RuntimeReady, NetworkReady). */
  status(signal?: AbortSignal): Promise<readonly RuntimeCondition[]>;
  /** The pods the runtime has; with `all` false only running containers and ready sandboxes. */
  getPods(all: boolean, signal?: AbortSignal): Promise<RuntimePod[]>;
  /** Brings the runtime's pod towards the desired pod; reports each step. */
  syncPod(options: RuntimeSyncPodOptions): Promise<PodSyncResult>;
  /** Stops every container of the pod and its sandboxes. */
  killPod(options: RuntimeKillPodOptions): Promise<PodSyncResult>;
  getPodStatus(options: RuntimeGetPodStatusOptions): Promise<RuntimePodStatus>;
  garbageCollect(options: RuntimeGarbageCollectOptions): Promise<void>;
}

/** The output of a command run in a container. @public */
export interface ExecResult {
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly exitCode: number;
}

/** Thrown by a {@link CommandRunner} when the command did not finish within its timeout. @public */
export class CommandTimeoutError extends CodedError<'CommandTimeout'> {
  constructor(message: string) {
    super('CommandTimeoutError', 'CommandTimeout', message);
  }
}

/** Options of {@link CommandRunner.runInContainer}. @public */
export interface RunInContainerOptions {
  /** The runtime's container ID (without the `type://` prefix). */
  readonly containerId: string;
  readonly cmd: readonly string[];
  /** 0 means no timeout. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** Runs a command in a running container (exec probes, exec lifecycle hooks). @public */
export interface CommandRunner {
  /** Resolves with the exit code; rejects with {@link CommandTimeoutError} on timeout. */
  runInContainer(options: RunInContainerOptions): Promise<ExecResult>;
}
