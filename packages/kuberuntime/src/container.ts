import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  type Clock,
  type Container,
  type ContainerID,
  type EventObjectRef,
  type EventRecorder,
  formatContainerID,
  type Logger,
  type Pod,
  podEventReference,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimeGetPodStatusOptions,
  type RuntimePod,
  type RuntimePodStatus,
  type RuntimeSyncPodOptions,
  type SyncResult,
} from '@kubelet-kit/core';
import {
  ContainerState,
  type ContainerStatus as CriContainerStatus,
  CriError,
  NamespaceMode,
  type PartialMessage,
  type PodSandboxConfig,
  type RuntimeServiceClient,
} from '@kubelet-kit/cri';
import { generateContainerConfig } from './container-config.js';
import { errorMessage, goErrorString, KubeRuntimeError } from './errors.js';
import { findContainerStatusByName, nsToMs } from './helpers.js';
import type { ImageManager } from './images.js';
import { type ContainerType, getContainerInfoFromAnnotations, getContainerInfoFromLabels } from './labels.js';
import type { HandlerRunner } from './lifecycle.js';
import {
  calcRestartCountByLogDir,
  maxContainerTerminationMessageLength,
  readLastStringFromContainerLogs,
  readTail,
} from './logs.js';
import type { ContainerKillReason } from './pod-actions.js';
import type { KubeGenericRuntimeManagerOptions } from './runtime-manager.js';
import { buildContainerLogsDirectory } from './sandbox-config.js';
import { TerminationOrdering } from './termination-order.js';

// Starting, stopping and removing containers, and reading their status back (upstream
// `kuberuntime_container.go`).

/** Upstream `minimumGracePeriodInSeconds`: a container always gets 2 s to stop. */
export const minimumGracePeriodInSeconds = 2;

/** What the container functions need of the manager. */
export interface ContainerContext {
  readonly runtimeService: Pick<
    RuntimeServiceClient,
    'containerStatus' | 'createContainer' | 'startContainer' | 'stopContainer' | 'removeContainer'
  >;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly recorder: EventRecorder;
  readonly images: Pick<ImageManager, 'ensureImageExists' | 'forgetImage'>;
  readonly hooks: Pick<HandlerRunner, 'run'>;
  /** The runtime's name for container IDs (`containerd`), as the manager last learnt it. */
  runtimeName(): string;
  readonly podLogsRootDirectory: string;
  /** The kubelet root: a pod's files go under `pods/<uid>`. */
  readonly rootDirectory: string;
  readonly memoryCapacity: number;
  readonly options: Pick<
    KubeGenericRuntimeManagerOptions,
    | 'nodeName'
    | 'nodeIPs'
    | 'objectGetter'
    | 'serviceLister'
    | 'volumeProvider'
    | 'subpather'
    | 'manageEtcHosts'
    | 'dns'
    | 'cpuCFSQuota'
    | 'cpuCFSQuotaPeriod'
  >;
  /** Runs a creation call within the manager's bound on creation calls. */
  creationCall<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Called once a container is removed: its remembered status goes with it. */
  forgetContainerStatus(id: string): void;
  /** The pod's status, for the IP of an httpGet preStop hook without a host. */
  getPodStatus(o: RuntimeGetPodStatusOptions): Promise<RuntimePodStatus>;
}

/** A container of a pod spec with the list it belongs to. */
export interface StartSpec {
  readonly container: Container;
  readonly type: ContainerType;
}

/** The container's spec in the pod, with which list it came from. */
export function getContainerSpec(pod: Pod, name: string): StartSpec | undefined {
  const init = pod.spec?.initContainers?.find((c) => c.name === name);
  if (init) return { container: init, type: 'init' };
  const main = pod.spec?.containers?.find((c) => c.name === name);
  if (main) return { container: main, type: 'container' };
  const eph = pod.spec?.ephemeralContainers?.find((c) => c.name === name);
  if (eph) return { container: eph as Container, type: 'ephemeral' };
  return undefined;
}

/** The event field path of a container: `spec.containers{app}`. */
export function fieldPath(type: ContainerType, name: string): string {
  const list =
    type === 'init' ? 'initContainers' : type === 'ephemeral' ? 'ephemeralContainers' : 'containers';
  return `spec.${list}{${name}}`;
}

/** The reference of events about one container of the pod. */
export function containerRef(pod: Pod, spec: StartSpec): EventObjectRef {
  return podEventReference(pod, fieldPath(spec.type, spec.container.name));
}

/** Where a sync starts a container: the sandbox, its config, and what the container is given. */
export interface StartContainerArgs {
  readonly podSandboxId: string;
  readonly sandboxConfig: PartialMessage<PodSandboxConfig>;
  readonly spec: StartSpec;
  readonly pod: Pod;
  readonly podStatus: RuntimePodStatus;
  readonly pullSecrets: RuntimeSyncPodOptions['pullSecrets'];
  readonly podIPs: readonly string[];
  readonly signal?: AbortSignal | undefined;
}

/**
 * Pulls the image, creates and starts the container and runs its postStart hook (upstream
 * `startContainer`); resolves with the container's ID. A failed step throws a
 * {@link KubeRuntimeError} with upstream's reason, after its event.
 */
export async function startContainer(ctx: ContainerContext, a: StartContainerArgs): Promise<string> {
  const { pod, spec, sandboxConfig, podIPs, signal } = a;
  const container = spec.container;
  const opts = ctx.options;
  const ref = containerRef(pod, spec);
  // Step 1: the image.
  let image: Awaited<ReturnType<ImageManager['ensureImageExists']>>;
  try {
    image = await ctx.images.ensureImageExists({
      pod,
      container,
      pullSecrets: a.pullSecrets,
      sandboxConfig,
      objectRef: ref,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    // The reason alone ("Error: ErrImagePull"): the image manager's own event has the detail.
    const reason = err instanceof KubeRuntimeError ? err.code : errorMessage(err);
    ctx.recorder.event(ref, 'Warning', 'Failed', `Error: ${reason}`);
    throw err;
  }
  // Step 2: the restart count, from the last instance or else from the log directory.
  const m = pod.metadata ?? {};
  const last = findContainerStatusByName(a.podStatus, container.name);
  // One that never started was removed for this one, which takes its count (see syncPod).
  const restartCount = last
    ? last.restartCount + (last.state === 'created' ? 0 : 1)
    : await calcRestartCountByLogDir(
        buildContainerLogsDirectory(
          ctx.podLogsRootDirectory,
          m.namespace ?? '',
          m.name ?? '',
          m.uid ?? '',
          container.name,
        ),
      );
  // Step 3: the config.
  const podDir = path.join(ctx.rootDirectory, 'pods', m.uid ?? '');
  let config: Awaited<ReturnType<typeof generateContainerConfig>>['config'];
  try {
    const generated = await generateContainerConfig(pod, container, {
      containerType: spec.type,
      restartCount,
      imageRef: image.imageRef,
      imageUser: { username: image.username, ...(image.uid !== undefined ? { uid: image.uid } : {}) },
      env: {
        nodeName: opts.nodeName ?? os.hostname(),
        // Host-network pods have the node's addresses.
        podIP: (pod.spec?.hostNetwork && podIPs.length === 0 ? opts.nodeIPs?.[0] : podIPs[0]) ?? '',
        podIPs: pod.spec?.hostNetwork && podIPs.length === 0 ? (opts.nodeIPs ?? []) : podIPs,
        hostIPs: opts.nodeIPs ?? [],
        ...(opts.objectGetter ? { objectGetter: opts.objectGetter } : {}),
        ...(opts.serviceLister ? { serviceLister: opts.serviceLister } : {}),
        ...(signal ? { signal } : {}),
      },
      volumes: opts.volumeProvider?.getMountedVolumesForPod(m.uid ?? '') ?? new Map(),
      ...(opts.subpather ? { subpather: opts.subpather } : {}),
      logger: ctx.logger,
      podDir,
      ...(sandboxConfig.linux?.securityContext?.namespaceOptions?.usernsOptions
        ? { usernsOptions: sandboxConfig.linux.securityContext.namespaceOptions.usernsOptions }
        : {}),
      ...(opts.manageEtcHosts === false
        ? {}
        : {
            etcHosts: {
              podDir,
              ...(opts.dns?.clusterDomain ? { clusterDomain: opts.dns.clusterDomain } : {}),
            },
          }),
      podLogsRootDirectory: ctx.podLogsRootDirectory,
      memoryCapacity: ctx.memoryCapacity,
      resources: {
        ...(opts.cpuCFSQuota !== undefined ? { cpuCFSQuota: opts.cpuCFSQuota } : {}),
        ...(opts.cpuCFSQuotaPeriod !== undefined ? { cpuCFSQuotaPeriod: opts.cpuCFSQuotaPeriod } : {}),
      },
    });
    config = generated.config;
    // An ephemeral container with targetContainerName joins that container's PID namespace
    // (upstream getTargetID and the NamespaceMode_TARGET override).
    const target = (container as { targetContainerName?: string }).targetContainerName;
    if (spec.type === 'ephemeral' && target) {
      const t = findContainerStatusByName(a.podStatus, target);
      if (t?.state !== 'running') throw new Error(`unable to find target container ${target}`);
      const ns = config.linux?.securityContext?.namespaceOptions;
      if (ns && (ns.pid === undefined || ns.pid === NamespaceMode.CONTAINER)) {
        ns.pid = NamespaceMode.TARGET;
        ns.targetId = t.id.id;
      }
    }
  } catch (err) {
    const message = errorMessage(err);
    ctx.recorder.event(ref, 'Warning', 'Failed', `Error: ${message}`);
    // Whatever failed (a config error, an env reference, a mount), the reason is the same.
    throw new KubeRuntimeError('CreateContainerConfigError', message, { cause: err });
  }
  // Step 4: create.
  const rs = ctx.runtimeService;
  let containerId: string;
  try {
    containerId = (
      await ctx.creationCall(
        () => rs.createContainer({ podSandboxId: a.podSandboxId, config, sandboxConfig }, { signal }),
        signal,
      )
    ).containerId;
  } catch (err) {
    // The image may be gone since it was last seen: ask the runtime on the next start.
    ctx.images.forgetImage(container.image ?? '');
    ctx.recorder.event(ref, 'Warning', 'Failed', `Error: ${errorMessage(err)}`);
    throw new KubeRuntimeError('CreateContainerError', errorMessage(err), { cause: err });
  }
  ctx.recorder.event(ref, 'Normal', 'Created', `Created container: ${container.name}`);
  // Step 5: start.
  try {
    await ctx.creationCall(() => rs.startContainer({ containerId }, { signal }), signal);
  } catch (err) {
    // The container's name for its ID: events that differ only in an ID do not aggregate.
    const message = errorMessage(err).replaceAll(containerId, container.name);
    ctx.recorder.event(ref, 'Warning', 'Failed', `Error: ${message}`);
    throw new KubeRuntimeError('RunContainerError', errorMessage(err), { cause: err });
  }
  ctx.recorder.event(ref, 'Normal', 'Started', `Started container ${container.name}`);
  // Step 6: postStart; its failure kills the container.
  const postStart = container.lifecycle?.postStart;
  if (postStart) {
    const cid: ContainerID = { type: ctx.runtimeName(), id: containerId };
    try {
      await ctx.hooks.run(
        { containerId: cid, pod, container, podIP: podIPs[0] ?? '', ...(signal ? { signal } : {}) },
        postStart,
      );
    } catch (err) {
      // The hook's own message stays out of the event: it may hold secrets.
      ctx.recorder.event(ref, 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
      try {
        await killContainer(ctx, {
          pod,
          containerId: cid,
          containerName: container.name,
          message: 'FailedPostStartHook',
          reason: 'FailedPostStartHook',
          ...(signal ? { signal } : {}),
        });
      } catch (killErr) {
        ctx.logger.error(
          { container: container.name, err: errorMessage(killErr) },
          'failed to kill container after postStart failure',
        );
      }
      throw new KubeRuntimeError('PostStartHookError', errorMessage(err), { cause: err });
    }
  }
  return containerId;
}

/** What `killContainer` stops, and why. @public */
export interface KillContainerOptions {
  /** The pod; without it the pod and container fields come from the container's labels. */
  readonly pod?: Pod;
  readonly containerId: ContainerID;
  readonly containerName: string;
  /** The Killing event's message (default `Stopping container <name>`). */
  readonly message?: string;
  readonly reason?: ContainerKillReason;
  readonly gracePeriodOverride?: number;
  readonly signal?: AbortSignal;
}

/** A kill as part of a pod's: with the pod's termination order, when it has sidecars. */
export interface KillInPodOptions extends KillContainerOptions {
  readonly ordering?: TerminationOrdering;
}

/**
 * Stops one container: runs its preStop hook within the grace period, then StopContainer with
 * what is left (at least 2 s). Upstream `killContainer`.
 */
export async function killContainer(ctx: ContainerContext, o: KillInPodOptions): Promise<void> {
  let pod = o.pod;
  let container: Container;
  let type: ContainerType = 'container';
  const spec = pod ? getContainerSpec(pod, o.containerName) : undefined;
  if (pod && spec) {
    container = spec.container;
    type = spec.type;
  } else if (pod) {
    // Not in the spec (any more): its hooks come from its own annotations, the grace from the pod.
    ({ container } = await restoreSpecsFromContainerLabels(ctx, o.containerId, o.signal));
  } else {
    ({ pod, container } = await restoreSpecsFromContainerLabels(ctx, o.containerId, o.signal));
  }
  let grace = setTerminationGracePeriod(pod, container, o.reason ?? '');
  const ref = podEventReference(pod, fieldPath(type, container.name));
  ctx.recorder.event(ref, 'Normal', 'Killing', o.message || `Stopping container ${container.name}`);
  if (o.gracePeriodOverride !== undefined) grace = o.gracePeriodOverride;

  const preStop = container.lifecycle?.preStop;
  if (preStop && grace > 0)
    grace -= await executePreStopHook(ctx, pod, container, ref, o.containerId, preStop, grace, o.signal);
  if (o.ordering && grace > 0)
    grace -= Math.trunc(await o.ordering.waitForTurn(container.name, grace, o.signal));
  // A minimal window to stop, so nothing is SIGKILLed needlessly.
  if (grace < minimumGracePeriodInSeconds) grace = minimumGracePeriodInSeconds;
  try {
    await ctx.runtimeService.stopContainer(
      { containerId: o.containerId.id, timeout: grace },
      { signal: o.signal },
    );
  } catch (err) {
    if (!CriError.is(err, 'NotFound')) throw err;
  }
  o.ordering?.containerTerminated(container.name);
}

/** Restores the pod and container fields killContainer needs from the container's labels. */
async function restoreSpecsFromContainerLabels(
  ctx: ContainerContext,
  containerId: ContainerID,
  signal?: AbortSignal,
): Promise<{ pod: Pod; container: Container }> {
  const res = await ctx.runtimeService.containerStatus({ containerId: containerId.id }, { signal });
  const s = res.status;
  if (!s) throw new Error(`container status is nil for ${formatContainerID(containerId)}`);
  const l = getContainerInfoFromLabels(s.labels);
  const a = getContainerInfoFromAnnotations(s.annotations);
  const pod: Pod = {
    metadata: {
      name: l.podName,
      namespace: l.podNamespace,
      uid: l.podUid,
      ...(a.podDeletionGracePeriod !== undefined
        ? { deletionGracePeriodSeconds: a.podDeletionGracePeriod }
        : {}),
    },
    spec: {
      containers: [],
      ...(a.podTerminationGracePeriod !== undefined
        ? { terminationGracePeriodSeconds: a.podTerminationGracePeriod }
        : {}),
    },
  };
  const container: Container = {
    name: l.containerName,
    ports: a.containerPorts,
    terminationMessagePath: a.terminationMessagePath,
    ...(a.preStopHandler ? { lifecycle: { preStop: a.preStopHandler } } : {}),
  };
  return { pod, container };
}

/** Runs preStop for at most `grace` seconds; resolves with the whole seconds it took. */
async function executePreStopHook(
  ctx: ContainerContext,
  pod: Pod,
  container: Container,
  ref: EventObjectRef,
  containerId: ContainerID,
  handler: NonNullable<NonNullable<Container['lifecycle']>['preStop']>,
  grace: number,
  signal?: AbortSignal,
): Promise<number> {
  const start = ctx.clock.now();
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const hook = podIPForHook(ctx, pod, handler, controller.signal)
    .then((podIP) =>
      ctx.hooks.run({ containerId, pod, container, podIP, signal: controller.signal }, handler),
    )
    .catch((err: unknown) => {
      if (controller.signal.aborted) return;
      ctx.recorder.event(ref, 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
      ctx.logger.warn({ container: container.name, err: errorMessage(err) }, 'preStop hook failed');
    });
  const timer = ctx.clock.sleep(grace * 1000, controller.signal).catch(() => undefined);
  try {
    await Promise.race([hook, timer]);
  } finally {
    // The hook is abandoned once the grace period is over, as upstream's goroutine is.
    controller.abort();
    signal?.removeEventListener('abort', onAbort);
  }
  return Math.trunc((ctx.clock.now() - start) / 1000);
}

/** The pod's IP for an httpGet hook without a host (upstream reads the pod status for it). */
async function podIPForHook(
  ctx: ContainerContext,
  pod: Pod,
  handler: NonNullable<Container['lifecycle']>['preStop'],
  signal: AbortSignal,
): Promise<string> {
  if (!handler?.httpGet || handler.httpGet.host) return '';
  const m = pod.metadata ?? {};
  const status = await ctx.getPodStatus({
    uid: m.uid ?? '',
    name: m.name ?? '',
    namespace: m.namespace ?? '',
    signal,
  });
  return status.ips[0] ?? '';
}

/** The grace period of a kill, in seconds (upstream `setTerminationGracePeriod`). */
export function setTerminationGracePeriod(
  pod: Pod,
  container: Container,
  reason: ContainerKillReason,
): number {
  const deletion = pod.metadata?.deletionGracePeriodSeconds;
  if (deletion !== undefined && deletion !== null) return deletion;
  const spec = pod.spec?.terminationGracePeriodSeconds;
  if (spec !== undefined && spec !== null) {
    const probe =
      reason === 'StartupProbe'
        ? container.startupProbe
        : reason === 'LivenessProbe'
          ? container.livenessProbe
          : undefined;
    const probeGrace = probe?.terminationGracePeriodSeconds;
    if (probeGrace !== undefined && probeGrace !== null) return probeGrace;
    return spec;
  }
  return minimumGracePeriodInSeconds;
}

/**
 * Stops every container of the running pod at once, sidecars in their termination order
 * (upstream `killContainersWithSyncResult`); one result per container.
 */
export async function killContainersWithSyncResult(
  ctx: ContainerContext,
  pod: Pod | undefined,
  runningPod: RuntimePod,
  gracePeriodOverride: number | undefined,
  signal?: AbortSignal,
): Promise<SyncResult[]> {
  const ordering =
    pod && TerminationOrdering.needed(pod)
      ? new TerminationOrdering(
          pod,
          runningPod.containers.map((c) => c.name),
          ctx.clock,
        )
      : undefined;
  return Promise.all(
    runningPod.containers.map(async (c): Promise<SyncResult> => {
      try {
        await killContainer(ctx, {
          ...(pod ? { pod } : {}),
          containerId: c.id,
          containerName: c.name,
          ...(gracePeriodOverride !== undefined ? { gracePeriodOverride } : {}),
          ...(ordering ? { ordering } : {}),
          ...(signal ? { signal } : {}),
        });
        return { action: 'KillContainer', target: c.name, message: '' };
      } catch (err) {
        ordering?.containerTerminated(c.name);
        return {
          action: 'KillContainer',
          target: c.name,
          error: 'KillContainerError',
          message: goErrorString(err),
        };
      }
    }),
  );
}

/** Removes the container and its log (upstream `removeContainer`); one already gone is no error. */
export async function removeContainer(
  ctx: ContainerContext,
  id: string,
  signal?: AbortSignal,
): Promise<void> {
  // Logs first: a container is only removed once its logs are gone, so a retry finds both.
  try {
    const res = await ctx.runtimeService.containerStatus({ containerId: id }, { signal });
    if (res.status?.logPath) await fs.rm(res.status.logPath, { force: true });
  } catch (err) {
    if (CriError.is(err, 'NotFound')) return;
    throw err;
  }
  await ctx.runtimeService.removeContainer({ containerId: id }, { signal });
  ctx.forgetContainerStatus(id);
}

/** Removes the container; a failure is logged (as `failure`), not thrown: the next sync tries again. */
async function removeOrWarn(
  ctx: ContainerContext,
  s: RuntimeContainerStatus,
  failure: string,
  signal?: AbortSignal,
): Promise<void> {
  await removeContainer(ctx, s.id.id, signal).catch((err: unknown) =>
    ctx.logger.warn({ container: s.name, id: s.id.id, err: errorMessage(err) }, failure),
  );
}

/** Removes every instance of every init container (upstream `purgeInitContainers`). */
export async function purgeInitContainers(
  ctx: ContainerContext,
  pod: Pod,
  podStatus: RuntimePodStatus,
  signal?: AbortSignal,
): Promise<void> {
  const names = new Set((pod.spec?.initContainers ?? []).map((c) => c.name));
  for (const s of podStatus.containerStatuses) {
    if (names.has(s.name)) await removeOrWarn(ctx, s, 'failed to remove init container', signal);
  }
}

/**
 * Keeps the newest exited (or unknown) instance of each init container (upstream
 * `pruneInitContainersBeforeStart`); resolves with how many it removed.
 */
export async function pruneInitContainersBeforeStart(
  ctx: ContainerContext,
  pod: Pod,
  podStatus: RuntimePodStatus,
  signal?: AbortSignal,
): Promise<number> {
  let removed = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    let count = 0;
    for (const s of podStatus.containerStatuses) {
      if (s.name !== c.name || (s.state !== 'exited' && s.state !== 'unknown')) continue;
      count++;
      if (count === 1) continue;
      removed++;
      await removeOrWarn(ctx, s, 'failed to prune init container', signal);
    }
  }
  return removed;
}

/**
 * Removes each container instance that was made but never started while a newer instance of
 * the same name exists; resolves with how many it removed. A CreateContainer whose reply was
 * lost with the runtime (it restarted) leaves such an instance, which the sync that replaced it
 * could not see; GC would keep it as the one dead instance per container for good. Not in
 * upstream (see the README).
 */
export async function removeSupersededNeverStarted(
  ctx: ContainerContext,
  podStatus: RuntimePodStatus,
  signal?: AbortSignal,
): Promise<number> {
  const newest = new Set<string>();
  let removed = 0;
  // containerStatuses are newest first.
  for (const s of podStatus.containerStatuses) {
    if (!newest.has(s.name)) {
      newest.add(s.name);
      continue;
    }
    if (s.state !== 'created') continue;
    removed++;
    await removeOrWarn(ctx, s, 'failed to remove a container that never started', signal);
  }
  return removed;
}

/** A CRI container state as the runtime-neutral one (upstream `toKubeContainerState`). */
export function toContainerState(state: ContainerState): RuntimeContainerState {
  switch (state) {
    case ContainerState.CONTAINER_CREATED:
      return 'created';
    case ContainerState.CONTAINER_RUNNING:
      return 'running';
    case ContainerState.CONTAINER_EXITED:
      return 'exited';
    default:
      return 'unknown';
  }
}

/**
 * A CRI container status as the runtime-neutral one (upstream `toKubeContainerStatus`): an
 * exited container's message gets its termination message file, or the end of its log when
 * its policy says so.
 */
export async function toContainerStatus(
  s: CriContainerStatus,
  runtimeName: string,
): Promise<RuntimeContainerStatus> {
  const labeled = getContainerInfoFromLabels(s.labels);
  const annotated = getContainerInfoFromAnnotations(s.annotations);
  const state = toContainerState(s.state);
  let message = state === 'exited' ? s.message : '';
  const exitCode = state === 'exited' ? s.exitCode : 0;
  const reason = state === 'exited' ? s.reason : '';
  if (state === 'exited') {
    const fallbackToLogs =
      annotated.terminationMessagePolicy === 'FallbackToLogsOnError' &&
      exitCode !== 0 &&
      reason !== 'ContainerCannotRun';
    let tMessage = '';
    const mount = annotated.terminationMessagePath
      ? s.mounts.find((m) => m.containerPath === annotated.terminationMessagePath)
      : undefined;
    if (mount) tMessage = await readTail(mount.hostPath, maxContainerTerminationMessageLength);
    if (!tMessage && fallbackToLogs && s.logPath) tMessage = await readLastStringFromContainerLogs(s.logPath);
    if (tMessage) message = message ? `${message}: ${tMessage}` : tMessage;
  }
  return {
    id: { type: runtimeName, id: s.id },
    name: labeled.containerName || s.metadata?.name || '',
    state,
    createdAt: nsToMs(s.createdAt),
    startedAt: state === 'created' ? 0 : nsToMs(s.startedAt),
    finishedAt: state === 'exited' ? nsToMs(s.finishedAt) : 0,
    exitCode,
    image: s.image?.userSpecifiedImage || s.image?.image || '',
    // The runtime's image ID when it reports one (CRI v1.30+), else the digested ref.
    imageId: s.imageId || s.imageRef,
    imageRef: s.imageRef,
    hash: annotated.hash,
    restartCount: annotated.restartCount,
    reason,
    message,
    ...(s.user?.linux
      ? {
          user: {
            linux: {
              uid: s.user.linux.uid,
              gid: s.user.linux.gid,
              supplementalGroups: [...s.user.linux.supplementalGroups],
            },
          },
        }
      : {}),
  };
}
