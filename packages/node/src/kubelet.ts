import { setMaxListeners } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  Backoff,
  type Clock,
  ConfigFirstSeenAnnotationKey,
  type EventRecorder,
  getPodFullName,
  isMirrorPod,
  type Logger,
  type MirrorClient,
  NetworkNotReadyError,
  type NodeAllocatable,
  noopEventRecorder,
  noopLogger,
  type ObjectGetter,
  type Pod,
  type PodStatus,
  type PodStatusCache,
  type PodUpdate,
  podEventReference,
  podSyncResultError,
  type Runtime,
  type RuntimePod,
  type RuntimePodStatus,
  type Secret,
  type Subpather,
  type SyncPodType,
  type SyncResult,
} from '@kubelet-kit/core';
import { convertPodStatusToRunningPod } from '@kubelet-kit/kuberuntime';
import type { PodManager } from '@kubelet-kit/pod-manager';
import {
  BasicWorkQueue,
  newPodWorkers,
  type PodStatusFunc,
  type PodSyncContext,
  type PodSyncer,
  type PodWorkers,
  type SyncPodResult,
  type WorkQueue,
} from '@kubelet-kit/pod-workers';
import { generatePodReadyCondition, isPodPhaseTerminal } from '@kubelet-kit/status-manager';
import PQueue from 'p-queue';
import { ActiveDeadlineHandler } from './active-deadline.js';
import { admitPod, PodResourceUsage } from './admission.js';
import { generateAPIPodStatus } from './api-pod-status.js';
import type { PodCgroups } from './cm/container-manager.js';
import type {
  PlegView,
  PodConfigView,
  ProbeManagerView,
  StatusManagerView,
  VolumeManagerView,
} from './deps.js';
import type { KubeletMetrics } from './metrics.js';
import { tryReconcileMirrorPods } from './mirror-pods.js';
import type { NodeInfo } from './node-info.js';
import { handlePodCleanups, type PodCleanupsContext } from './pod-cleanups.js';
import { admitPodFeatures, type PodFeatureSupport } from './pod-feature-admission.js';
import { PodInspections } from './pod-inspections.js';
import { ReasonCache } from './reason-cache.js';
import type { SysctlAllowlist } from './sysctl.js';

/**
 * Options of {@link Kubelet}.
 *
 * @public
 */
export interface KubeletOptions {
  readonly nodeName: string;
  /** Where pod data directories live: `<rootDirectory>/pods/<uid>`. */
  readonly rootDirectory: string;
  readonly nodeIPs: readonly string[];
  readonly allocatable: NodeAllocatable;
  readonly runtime: Runtime;
  readonly podConfig: PodConfigView;
  readonly podManager: PodManager;
  readonly statusManager: StatusManagerView;
  readonly pleg: PlegView;
  readonly podCache: PodStatusCache;
  readonly probeManager?: ProbeManagerView;
  readonly volumeManager?: VolumeManagerView;
  /**
   * Unmounts subPath bind mounts left in orphaned pod directories; without it such a directory
   * is kept (upstream keeps any with `volume-subpaths`).
   */
  readonly subpather?: Subpather;
  readonly objectGetter?: ObjectGetter;
  /** Creates and deletes mirror pods of static pods on the API server (API server mode). */
  readonly mirrorClient?: MirrorClient;
  readonly clock: Clock;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  readonly metrics?: KubeletMetrics;
  /** Pod resync interval (upstream --sync-frequency, default 60 s). */
  readonly resyncIntervalMs?: number;
  /** How often dead containers and sandboxes are collected (default 60 s). */
  readonly containerGCPeriodMs?: number;
  /** Bound on concurrent pod syncs (default none). */
  readonly maxConcurrentSyncs?: number;
  /**
   * Bound on pods whose sandbox is being created at once (default 16). Creating every pod's
   * sandbox at the same moment makes the runtime slower than a few at a time; syncs of running
   * pods never wait for this.
   */
  readonly maxConcurrentPodCreations?: number;
  /** Crash-loop backoff (defaults 10 s doubling to 300 s). */
  readonly crashLoopBackOff?: { readonly initialMs: number; readonly maxMs: number };
  readonly allowHostNetwork?: boolean;
  readonly allowPrivileged?: boolean;
  /** The node's labels and taints, for node name, node affinity and NoExecute taint admission. */
  readonly node?: NodeInfo;
  /** The sysctls pods may set (safe ones plus --allowed-unsafe-sysctls). */
  readonly sysctls?: SysctlAllowlist;
  /** How soon a pod waiting on a crash-loop or image backoff is synced again (default 10 s). */
  readonly backoffRequeueMs?: number;
  /** Whether the runtime's network is ready; pods that need pod networking wait for it. */
  readonly networkReady?: () => boolean;
  /** What the node can enforce of AppArmor and supplementalGroupsPolicy; omitted: neither. */
  readonly podFeatures?: PodFeatureSupport;
  /**
   * Upstream `runtimeState.runtimeErrors`: while it returns an error (the runtime is down or not
   * ready), the sync tick and housekeeping skip their rounds, as upstream's syncLoop does; work
   * that falls due meanwhile stays queued for the first round after.
   */
  readonly runtimeErrors?: () => string | undefined;
  /** Upstream --cgroups-per-qos: the pods' cgroups, made before the sandbox, removed after the pod. */
  readonly podCgroups?: PodCgroups;
  /**
   * The eviction manager's admission check (upstream: the first pod admit handler): refuses
   * pods the node cannot take under its current resource pressure.
   */
  readonly evictionAdmit?: (pod: Pod) => {
    readonly admit: boolean;
    readonly reason?: string;
    readonly message?: string;
  };
}

const syncTickMs = 1000;
const noPodFeatures: PodFeatureSupport = {
  appArmorHostError: 'AppArmor is not enabled on the host',
  supplementalGroupsPolicy: () => false,
};

/** A step that started, stopped or created something the PLEG should look at. */
function changedContainers(r: SyncResult): boolean {
  return r.error === undefined && r.action !== 'ConfigPodSandbox';
}
const housekeepingPeriodMs = 2000;

/**
 * Upstream `NeedToReconcilePodReadiness`: a pod with readiness gates whose Ready condition (as
 * its source holds it) differs in status or message from the one its own conditions and
 * container statuses give.
 */
function needToReconcilePodReadiness(pod: Pod): boolean {
  if ((pod.spec?.readinessGates ?? []).length === 0) return false;
  const status = pod.status ?? {};
  const current = status.conditions?.find((c) => c.type === 'Ready');
  if (!current) return false;
  const expected = generatePodReadyCondition(
    pod,
    status.conditions,
    status.containerStatuses,
    status.phase ?? '',
  );
  return current.status !== expected.status || (current.message ?? '') !== (expected.message ?? '');
}

/** Epoch ms of a timestamp, or 0 when it is absent or unparsable. */
function epochMs(t: string | undefined): number {
  const ms = t ? Date.parse(t) : Number.NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

/** The kubelet's first-seen stamp of the pod (epoch ms), or 0 when it has none. */
function firstSeenTime(pod: Pod): number {
  return epochMs(pod.metadata?.annotations?.[ConfigFirstSeenAnnotationKey]);
}

function creationTime(pod: Pod): number {
  return epochMs(
    pod.metadata?.creationTimestamp ?? pod.metadata?.annotations?.[ConfigFirstSeenAnnotationKey],
  );
}

/**
 * The node agent: the kubelet's sync loop over pod updates, PLEG events, the 1 s sync tick,
 * the 2 s housekeeping and probe results, and the pod lifecycle (`syncPod`,
 * `syncTerminatingPod`, `syncTerminatedPod`) that the pod workers call.
 *
 * @public
 */
export class Kubelet implements PodSyncer {
  readonly podWorkers: PodWorkers;
  readonly #reasonCache = new ReasonCache();
  readonly #o: KubeletOptions;
  readonly #log: Logger;
  readonly #recorder: EventRecorder;
  readonly #clock: Clock;
  readonly #workQueue: WorkQueue;
  readonly #crashLoopBackOff: Backoff;
  readonly #abort = new AbortController();
  readonly #disposers: Array<() => void> = [];
  readonly #startedPods = new Set<string>();
  /** Pods whose data directories exist. */
  readonly #podDirsMade = new Set<string>();
  readonly #podsInBackoff = new Set<string>();
  readonly #activeDeadline: ActiveDeadlineHandler;
  readonly #inspections: PodInspections;
  readonly #cleanups: PodCleanupsContext;
  readonly #creations: PQueue;
  #configLoop: Promise<void> | undefined;
  #housekeepingBusy = false;
  /** When the 1 s sync tick last ran (0: not yet). */
  #lastSyncLoopEntry = 0;
  #lastGC = 0;
  /** The runtime error last logged by the sync tick (undefined while the runtime is fine). */
  #runtimeErrorLogged: string | undefined;
  #gcRequested = false;

  constructor(options: KubeletOptions) {
    this.#o = options;
    // Housekeeping, GC and pull-secret reads all listen on it, often at the same time.
    setMaxListeners(0, this.#abort.signal);
    this.#log = options.logger ?? noopLogger;
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#clock = options.clock;
    // A pod left waiting on a crash-loop or image-pull backoff is looked at again after the
    // sync error backoff (10 s) rather than the full resync interval, so a restart follows soon
    // after its backoff expires (upstream's effective behaviour, within 10 s).
    const queue = new BasicWorkQueue({ clock: options.clock });
    const inBackoff = this.#podsInBackoff;
    const backoffRequeueMs = options.backoffRequeueMs ?? 10_000;
    this.#workQueue = {
      getWork: () => queue.getWork(),
      enqueue: (uid, delayMs) => {
        const backoff = inBackoff.delete(uid);
        queue.enqueue(uid, backoff ? Math.min(delayMs, backoffRequeueMs) : delayMs);
      },
    };
    const crash = options.crashLoopBackOff ?? { initialMs: 10_000, maxMs: 300_000 };
    this.#crashLoopBackOff = new Backoff({
      clock: options.clock,
      initialMs: crash.initialMs,
      maxMs: crash.maxMs,
      // The kubelet forgets a container's crash history after it ran 10 minutes.
      hasExpired: (eventTime, lastUpdate) => eventTime - lastUpdate > 600_000,
    });
    this.#creations = new PQueue({ concurrency: Math.max(1, options.maxConcurrentPodCreations ?? 16) });
    this.podWorkers = newPodWorkers({
      podSyncer: this,
      podCache: options.podCache,
      clock: options.clock,
      workQueue: this.#workQueue,
      recorder: this.#recorder,
      logger: this.#log.child({ component: 'pod-workers' }),
      ...(options.resyncIntervalMs !== undefined ? { resyncIntervalMs: options.resyncIntervalMs } : {}),
      ...(options.maxConcurrentSyncs !== undefined ? { maxConcurrentSyncs: options.maxConcurrentSyncs } : {}),
    });
    this.#activeDeadline = new ActiveDeadlineHandler({
      clock: options.clock,
      recorder: this.#recorder,
      podStatus: (uid) => options.statusManager.getPodStatus(uid),
    });
    this.#inspections = new PodInspections({
      pleg: options.pleg,
      clock: options.clock,
      logger: this.#log,
      signal: this.#abort.signal,
    });
    this.#cleanups = {
      rootDirectory: options.rootDirectory,
      runtime: options.runtime,
      podManager: options.podManager,
      podWorkers: this.podWorkers,
      statusManager: options.statusManager,
      probeManager: options.probeManager,
      mirrorClient: options.mirrorClient,
      subpather: options.subpather,
      metrics: options.metrics,
      podDirsMade: this.#podDirsMade,
      podCgroups: options.podCgroups,
      clock: options.clock,
      logger: this.#log,
      signal: this.#abort.signal,
    };
  }

  /** Starts every loop. Resolves once started; the loops run until `stop`. */
  async start(): Promise<void> {
    const o = this.#o;
    await fs.mkdir(path.join(o.rootDirectory, 'pods'), { recursive: true });
    o.statusManager.start();
    o.probeManager?.start();
    await o.volumeManager?.start();
    o.pleg.start();
    this.#disposers.push(o.pleg.watch((event) => this.#onPlegEvent(event)));
    if (o.probeManager) {
      const pm = o.probeManager;
      this.#disposers.push(
        pm.onResult('liveness', (u) => {
          if (u.result === 'Failure') this.#syncByUid(u.podUid);
        }),
        pm.onResult('readiness', (u) => {
          o.statusManager.setContainerReadiness(u.podUid, u.containerId, u.result === 'Success');
          this.#syncByUid(u.podUid);
        }),
        pm.onResult('startup', (u) => {
          o.statusManager.setContainerStartup(u.podUid, u.containerId, u.result === 'Success');
          this.#syncByUid(u.podUid);
        }),
      );
    }
    const tick = this.#clock.setInterval(() => this.#onSyncTick(), syncTickMs);
    const housekeeping = this.#clock.setInterval(() => {
      void this.#housekeeping();
    }, housekeepingPeriodMs);
    this.#disposers.push(
      () => tick.cancel(),
      () => housekeeping.cancel(),
    );
    await o.podConfig.start();
    this.#configLoop = this.#runConfigLoop();
  }

  /** Stops the loops. Containers keep running: a restarted agent adopts them. */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#inspections.stop();
    for (const dispose of this.#disposers.splice(0)) dispose();
    const o = this.#o;
    await o.podConfig.stop();
    await this.#configLoop?.catch(() => {});
    o.pleg.stop();
    await o.probeManager?.stop();
    await o.volumeManager?.stop();
    await o.statusManager.stop();
  }

  /** The desired pods with their current API status (for `/pods`). */
  podsWithStatus(): Pod[] {
    const { pods, mirrorPods } = this.#o.podManager.getPodsAndMirrorPods();
    void mirrorPods;
    return pods.map((pod) => {
      const status = this.#o.statusManager.getPodStatus(pod.metadata?.uid ?? '') ?? pod.status ?? {};
      return { apiVersion: 'v1', kind: 'Pod', ...pod, status };
    });
  }

  async #runConfigLoop(): Promise<void> {
    try {
      for await (const update of this.#o.podConfig.updates(this.#abort.signal)) {
        try {
          this.#handleUpdate(update);
        } catch (err) {
          // One bad update never stops the loop.
          this.#log.error(
            { err: String(err), op: update.op, source: update.source },
            'handling a pod update failed',
          );
        }
      }
    } catch (err) {
      if (!this.#abort.signal.aborted) this.#log.error({ err: String(err) }, 'pod config stream ended');
    }
  }

  #handleUpdate(update: PodUpdate): void {
    switch (update.op) {
      case 'ADD':
        this.handlePodAdditions(update.pods);
        break;
      case 'UPDATE':
      case 'DELETE':
        this.handlePodUpdates(update.pods);
        break;
      case 'REMOVE':
        this.handlePodRemoves(update.pods);
        break;
      case 'RECONCILE':
        this.handlePodReconcile(update.pods);
        break;
      case 'SET':
        this.#log.warn({ source: update.source }, 'SET updates are not supported by the sync loop');
        break;
    }
  }

  /** Upstream `HandlePodAdditions`: oldest first, admitted, then handed to a pod worker. */
  handlePodAdditions(pods: readonly Pod[]): void {
    const start = this.#clock.now();
    const sorted = [...pods].sort((a, b) => creationTime(a) - creationTime(b));
    const o = this.#o;
    // The active pods and what they hold once per batch, each admitted pod added: not a full
    // scan per pod.
    let activePods: Pod[] | undefined;
    let usage: PodResourceUsage | undefined;
    for (const pod of sorted) {
      o.podManager.addPod(pod);
      const { pod: staticPod, mirrorPod, wasMirror } = o.podManager.getPodAndMirrorPod(pod);
      if (wasMirror) {
        // A mirror pod's arrival is news for its static pod's worker (which then knows the
        // mirror to write status through); a mirror with no static pod is left alone.
        if (staticPod) {
          this.#dispatchWork('update', staticPod, pod, start);
        }
        continue;
      }
      const uid = pod.metadata?.uid ?? '';
      // A pod that is being terminated, or that arrives with a terminal phase (it finished
      // before this agent started), is not admitted again: its worker only finishes it.
      if (!this.podWorkers.isPodTerminationRequested(uid) && !isPodPhaseTerminal(pod.status?.phase)) {
        activePods ??= this.#activePods().filter((p) => p.metadata?.uid !== uid);
        usage ??= new PodResourceUsage(activePods);
        const underPressure = o.evictionAdmit?.(pod);
        if (underPressure && !underPressure.admit) {
          this.#rejectPod(pod, underPressure.reason ?? 'Evicted', underPressure.message ?? '');
          continue;
        }
        const result = admitPod({
          pod,
          activePods,
          usage,
          allocatable: o.allocatable,
          ...(o.allowHostNetwork !== undefined ? { allowHostNetwork: o.allowHostNetwork } : {}),
          ...(o.allowPrivileged !== undefined ? { allowPrivileged: o.allowPrivileged } : {}),
          ...(o.node ? { node: o.node } : {}),
          ...(o.sysctls ? { sysctls: o.sysctls } : {}),
        });
        if (!result.admit) {
          this.#rejectPod(pod, result.reason ?? 'Rejected', result.message ?? '');
          continue;
        }
        const refused = admitPodFeatures(pod, o.podFeatures ?? noPodFeatures);
        if (refused) {
          this.#rejectPod(pod, refused.reason ?? 'Rejected', refused.message ?? '');
          continue;
        }
        activePods.push(pod);
        usage.add(pod);
      }
      this.#activeDeadline.track(pod);
      this.#dispatchWork('create', pod, mirrorPod, start);
    }
  }

  /** Upstream `HandlePodUpdates`. */
  handlePodUpdates(pods: readonly Pod[]): void {
    const start = this.#clock.now();
    for (const pod of pods) {
      this.#o.podManager.updatePod(pod);
      const { pod: staticPod, mirrorPod } = this.#o.podManager.getPodAndMirrorPod(pod);
      if (!staticPod) continue;
      if (isMirrorPod(pod) && staticPod === pod) continue;
      this.#activeDeadline.track(staticPod);
      this.#dispatchWork('update', staticPod, mirrorPod, start);
    }
  }

  /** Upstream `HandlePodRemoves`: the pod is gone from its source; terminate it. */
  handlePodRemoves(pods: readonly Pod[]): void {
    const start = this.#clock.now();
    for (const pod of pods) {
      this.#o.podManager.removePod(pod);
      if (isMirrorPod(pod)) {
        const { pod: staticPod, mirrorPod } = this.#o.podManager.getPodAndMirrorPod(pod);
        if (staticPod) {
          this.#dispatchWork('update', staticPod, mirrorPod, start);
        }
        continue;
      }
      if (!this.#o.podConfig.seenAllSources()) {
        // As upstream: do not kill while some source has not told us what it wants.
        this.#log.info({ pod: getPodFullName(pod) }, 'skipping delete because sources are not ready yet');
        continue;
      }
      this.#dispatchWork('kill', pod, undefined, start);
    }
  }

  /**
   * Upstream `HandlePodReconcile`: a status-only change from a source. The pod manager takes the
   * new object; the pod is synced only when the Ready condition it carries disagrees with its
   * readiness gates (the kubelet's own status writes come back here and need no sync).
   */
  handlePodReconcile(pods: readonly Pod[]): void {
    const start = this.#clock.now();
    for (const pod of pods) {
      this.#o.podManager.updatePod(pod);
      const { pod: syncedPod, mirrorPod, wasMirror } = this.#o.podManager.getPodAndMirrorPod(pod);
      // A mirror pod stands for its static pod, which is reconciled like any other.
      const target = wasMirror ? syncedPod : pod;
      if (!target || !needToReconcilePodReadiness(target)) continue;
      this.#dispatchWork('sync', target, mirrorPod, start);
    }
  }

  #syncByUid(uid: string): void {
    const pod = this.#o.podManager.getPodByUID(uid);
    if (!pod) return;
    const { mirrorPod } = this.#o.podManager.getPodAndMirrorPod(pod);
    this.#dispatchWork('sync', pod, mirrorPod, this.#clock.now());
  }

  /** Upstream `dispatchWork`: hands the pod (and its mirror, if any) to its worker. */
  #dispatchWork(updateType: SyncPodType, pod: Pod, mirrorPod: Pod | undefined, startTime: number): void {
    this.podWorkers.updatePod({ updateType, pod, ...(mirrorPod ? { mirrorPod } : {}), startTime });
  }

  #onPlegEvent(event: { readonly id: string; readonly type: string }): void {
    if (event.type === 'ContainerRemoved') return;
    this.#syncByUid(event.id);
    if (event.type === 'ContainerDied') this.#gcRequested = true;
  }

  /**
   * Upstream `SyncLoopHealthCheck` (the `syncloop` check of /healthz): unhealthy once the sync
   * loop has not come round for twice the resync interval, and at least 5 minutes.
   */
  syncLoopHealthCheck(): string | undefined {
    if (this.#lastSyncLoopEntry === 0) return undefined;
    const limit = Math.max(2 * (this.#o.resyncIntervalMs ?? 60_000), 5 * 60_000);
    return this.#clock.since(this.#lastSyncLoopEntry) > limit
      ? 'sync Loop took longer than expected'
      : undefined;
  }

  /** Upstream `getPodsToSync`: pods whose work is due, and pods past their active deadline. */
  #onSyncTick(): void {
    if (this.#runtimeDown()) return;
    this.#lastSyncLoopEntry = this.#clock.now();
    const due = this.#workQueue.getWork();
    for (const uid of due) this.#syncByUid(uid);
    if (this.#activeDeadline.size === 0) return;
    const pastDeadline = this.#activeDeadline.podsToSync(
      (uid) => this.#o.podManager.getPodByUID(uid),
      new Set(due),
    );
    for (const uid of pastDeadline) this.#syncByUid(uid);
  }

  /** Whether the runtime reports errors; logged once per outage, as a round is skipped. */
  #runtimeDown(): boolean {
    const err = this.#o.runtimeErrors?.();
    if (err === undefined) {
      this.#runtimeErrorLogged = undefined;
      return false;
    }
    if (this.#runtimeErrorLogged !== err) {
      this.#runtimeErrorLogged = err;
      this.#log.error({ err }, 'Skipping pod synchronization');
    }
    return true;
  }

  /**
   * Upstream `GetActivePods`: the desired pods that are neither known terminated nor in a
   * terminal phase (what the eviction manager may evict and admission counts).
   */
  getActivePods(): Pod[] {
    return this.#activePods();
  }

  /**
   * Upstream `PodResourcesAreReclaimed`, its container part: no container of the pod can be
   * running (the agent adds the volume manager's part).
   */
  podResourcesAreReclaimed(pod: Pod): boolean {
    return !this.podWorkers.couldHaveRunningContainers(pod.metadata?.uid ?? '');
  }

  /**
   * Upstream `ContainerGC.DeleteAllUnusedContainers`: every dead container and sandbox of pods
   * no longer wanted, evicted pods' included, at once (node-level reclaim under disk pressure).
   */
  async deleteAllUnusedContainers(): Promise<void> {
    await this.#o.runtime.garbageCollect({
      policy: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
      allSourcesReady: this.#o.podConfig.seenAllSources(),
      evictNonDeletedPods: true,
      signal: this.#abort.signal,
    });
  }

  #activePods(): Pod[] {
    return this.#o.podManager
      .getPods()
      .filter((p) => !this.podWorkers.isPodKnownTerminated(p.metadata?.uid ?? ''))
      .filter((p) => !isPodPhaseTerminal(this.#o.statusManager.getPodPhase(p.metadata?.uid ?? '')));
  }

  #rejectPod(pod: Pod, reason: string, message: string): void {
    this.#recorder.event(podEventReference(pod), 'Warning', reason, message);
    this.#log.warn({ pod: getPodFullName(pod), reason, message }, 'pod rejected');
    this.#o.statusManager.setPodStatus(pod, {
      ...(pod.status ?? {}),
      phase: 'Failed',
      reason,
      message: `Pod was rejected: ${message}`,
    });
  }

  /** Upstream `HandlePodCleanups`, run every 2 s once all sources are ready. */
  async #housekeeping(): Promise<void> {
    if (this.#housekeepingBusy || this.#abort.signal.aborted || this.#runtimeDown()) return;
    if (!this.#o.podConfig.seenAllSources()) return;
    this.#housekeepingBusy = true;
    try {
      await this.handlePodCleanups();
    } catch (err) {
      this.#log.error({ err: String(err) }, 'housekeeping failed');
    } finally {
      this.#housekeepingBusy = false;
    }
  }

  /**
   * Housekeeping's round (upstream `HandlePodCleanups`, see pod-cleanups.ts), then the crash-loop
   * backoff's and the runtime's garbage collection.
   */
  async handlePodCleanups(): Promise<void> {
    const o = this.#o;
    await handlePodCleanups(this.#cleanups);

    this.#crashLoopBackOff.gc();
    const gcPeriod = o.containerGCPeriodMs ?? 60_000;
    if (this.#gcRequested || this.#clock.since(this.#lastGC) >= gcPeriod) {
      this.#gcRequested = false;
      this.#lastGC = this.#clock.now();
      await o.runtime
        .garbageCollect({
          policy: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
          allSourcesReady: true,
          evictNonDeletedPods: false,
          signal: this.#abort.signal,
        })
        .catch((err: unknown) => this.#log.warn({ err: String(err) }, 'container garbage collection failed'));
    }
  }

  #apiStatus(pod: Pod, podStatus: RuntimePodStatus, podIsTerminal: boolean): PodStatus {
    const o = this.#o;
    const uid = pod.metadata?.uid ?? '';
    return generateAPIPodStatus({
      pod,
      podStatus,
      podIsTerminal,
      cachedStatus: o.statusManager.getPodStatus(uid),
      reasonCache: this.#reasonCache,
      nodeIPs: o.nodeIPs,
      shouldEvict: (p) => this.#activeDeadline.shouldEvict(p),
      ...(o.probeManager
        ? { updateReadiness: (p: Pod, s: PodStatus) => o.probeManager!.updatePodStatus(p, s) }
        : {}),
    });
  }

  async #pullSecrets(pod: Pod, signal: AbortSignal): Promise<Secret[]> {
    const getter = this.#o.objectGetter;
    const refs = pod.spec?.imagePullSecrets ?? [];
    if (!getter || refs.length === 0) return [];
    const secrets: Secret[] = [];
    for (const ref of refs) {
      if (!ref.name) continue;
      const s = await getter
        .getSecret(pod.metadata?.namespace ?? 'default', ref.name, signal)
        .catch(() => undefined);
      if (s) secrets.push(s);
      else this.#log.warn({ pod: getPodFullName(pod), secret: ref.name }, 'unable to retrieve pull secret');
    }
    return secrets;
  }

  /** Upstream `SyncPod`: status, data dirs, volumes, pull secrets, then the runtime. */
  async syncPod(
    ctx: PodSyncContext,
    updateType: SyncPodType,
    pod: Pod,
    mirrorPod: Pod | undefined,
    podStatus: RuntimePodStatus,
  ): Promise<SyncPodResult> {
    const o = this.#o;
    const uid = pod.metadata?.uid ?? '';
    const started = this.#clock.now();
    try {
      const apiStatus = this.#apiStatus(pod, podStatus, false);
      if (isPodPhaseTerminal(apiStatus.phase)) {
        o.statusManager.setPodStatus(pod, apiStatus);
        return { isTerminal: true };
      }
      o.statusManager.setPodStatus(pod, apiStatus);
      if (!this.#startedPods.has(uid) && apiStatus.phase === 'Running') {
        this.#startedPods.add(uid);
        // From when this node first saw the pod (its source's first-seen stamp), not from the
        // pod's creation: an API pod's creation time includes its scheduling.
        const firstSeen = firstSeenTime(pod);
        if (firstSeen > 0)
          o.metrics?.podStartDuration.observe(Math.max(0, this.#clock.now() - firstSeen) / 1000);
      }
      if (!pod.spec?.hostNetwork && o.networkReady && !o.networkReady()) {
        throw new NetworkNotReadyError();
      }
      // Upstream: the pod's cgroup exists before anything of the pod is made.
      o.podCgroups?.ensurePod(pod);
      if (o.mirrorClient) await tryReconcileMirrorPods(o.mirrorClient, this.#log, pod, mirrorPod);
      if (!this.#podDirsMade.has(uid)) {
        // Through the thread pool: a new directory costs 0.1 ms or more of kernel time, which on
        // the main thread would hold up every other pod.
        await Promise.all([
          fs.mkdir(path.join(o.rootDirectory, 'pods', uid, 'volumes'), { recursive: true }),
          fs.mkdir(path.join(o.rootDirectory, 'pods', uid, 'plugins'), { recursive: true }),
        ]);
        // Made once per pod (upstream makes them on every sync): only this agent removes them.
        this.#podDirsMade.add(uid);
      }
      // A pod that declares no volume has none to wait for (upstream's WaitForAttachAndMount
      // returns at once): asking would only wake the volume populator, whose pass visits every
      // desired pod, once per sync of every pod.
      if (o.volumeManager && (pod.spec?.volumes?.length ?? 0) > 0) {
        try {
          await o.volumeManager.waitForAttachAndMount(pod, { signal: ctx.signal });
        } catch (err) {
          this.#recorder.event(
            podEventReference(pod),
            'Warning',
            'FailedMount',
            `Unable to attach or mount volumes: ${(err as Error).message}`,
          );
          throw err;
        }
      }
      const pullSecrets = await this.#pullSecrets(pod, ctx.signal);
      o.probeManager?.addPod(pod);
      // While the runtime works on the pod, relists leave it alone (it is read once done).
      let held = false;
      let changed = true;
      let statusAfter: RuntimePodStatus | undefined;
      const runtimeSync = async () => {
        o.pleg.holdPod?.(uid);
        held = true;
        const r = await o.runtime.syncPod({
          pod,
          podStatus,
          pullSecrets,
          backOff: this.#crashLoopBackOff,
          signal: ctx.signal,
        });
        changed = r.syncResults.some(changedContainers);
        statusAfter = r.podStatus;
        return r;
      };
      // A pod without a ready sandbox is about to be created: take a creation slot.
      const creating = !podStatus.sandboxStatuses.some((s) => s.state === 'ready');
      let result: Awaited<ReturnType<typeof runtimeSync>>;
      try {
        result = creating
          ? await this.#creations.add(runtimeSync, { signal: ctx.signal })
          : await runtimeSync();
      } finally {
        // After a failure nobody knows what was made: read the pod.
        if (held && changed) this.#inspections.requestPod(pod, statusAfter);
        else if (held) o.pleg.releasePod?.(uid);
      }
      // A new start failure (CrashLoopBackOff, ErrImagePull, …) shows in the status at once, not
      // only from the next sync (which, for a backoff, is when the wait ends).
      if (this.#reasonCache.update(uid, result))
        o.statusManager.setPodStatus(pod, this.#apiStatus(pod, podStatus, false));
      const err = podSyncResultError(result);
      // A backoff wait is not a failure (no error backoff, no FailedSync), but the pod is
      // requeued soon enough to restart once its backoff expires.
      if (err && !err.onlyBackoff) throw err;
      if (err) this.#podsInBackoff.add(uid);
      return { isTerminal: false };
    } finally {
      o.metrics?.podWorkerDuration.observe(
        { operation_type: updateType },
        (this.#clock.now() - started) / 1000,
      );
    }
  }

  /** Upstream `SyncTerminatingPod`: stop probes, kill with grace, report the terminal status. */
  async syncTerminatingPod(
    ctx: PodSyncContext,
    pod: Pod,
    podStatus: RuntimePodStatus,
    gracePeriod: number | undefined,
    podStatusFn?: PodStatusFunc,
  ): Promise<void> {
    const o = this.#o;
    const apiStatus = this.#apiStatus(pod, podStatus, false);
    podStatusFn?.(apiStatus);
    o.statusManager.setPodStatus(pod, apiStatus);
    o.probeManager?.stopLivenessAndStartup(pod);
    const runningPod = convertPodStatusToRunningPod(podStatus);
    const result = await o.runtime.killPod({
      pod,
      runningPod,
      ...(gracePeriod !== undefined ? { gracePeriodOverride: gracePeriod } : {}),
      signal: ctx.signal,
    });
    if (result.syncResults.some(changedContainers)) this.#inspections.requestPod(pod);
    const err = podSyncResultError(result);
    if (err) {
      this.#recorder.event(
        podEventReference(pod),
        'Warning',
        'FailedKillPod',
        `error killing pod: ${err.message}`,
      );
      throw err;
    }
    o.probeManager?.removePod(pod);
    const stopped = await o.runtime.getPodStatus({
      uid: pod.metadata?.uid ?? '',
      name: pod.metadata?.name ?? '',
      namespace: pod.metadata?.namespace ?? '',
      signal: ctx.signal,
    });
    const stillRunning = stopped.containerStatuses.filter((c) => c.state === 'running');
    if (stillRunning.length > 0) {
      throw new Error(
        `detected running containers after a successful KillPod, CRI violation: ${stillRunning.map((c) => c.name).join(', ')}`,
      );
    }
    o.statusManager.setPodStatus(pod, this.#apiStatus(pod, stopped, true));
  }

  /** Upstream `SyncTerminatingRuntimePod`: a pod only the runtime knows, killed with grace 1. */
  async syncTerminatingRuntimePod(ctx: PodSyncContext, runningPod: RuntimePod): Promise<void> {
    const result = await this.#o.runtime.killPod({ runningPod, gracePeriodOverride: 1, signal: ctx.signal });
    if (result.syncResults.some(changedContainers)) {
      this.#inspections.request({
        uid: runningPod.id,
        name: runningPod.name,
        namespace: runningPod.namespace,
      });
    }
    const err = podSyncResultError(result);
    if (err) throw err;
    this.#gcRequested = true;
  }

  /** Upstream `SyncTerminatedPod`: final status, volumes unmounted, the status manager told. */
  async syncTerminatedPod(ctx: PodSyncContext, pod: Pod, podStatus: RuntimePodStatus): Promise<void> {
    const o = this.#o;
    o.statusManager.setPodStatus(pod, this.#apiStatus(pod, podStatus, true));
    await o.volumeManager?.waitForUnmount(pod, { signal: ctx.signal });
    o.podCgroups?.destroyPod(pod);
    o.statusManager.terminatePod(pod);
    this.#reasonCache.removePod(pod.metadata?.uid ?? '');
    this.#startedPods.delete(pod.metadata?.uid ?? '');
    this.#podDirsMade.delete(pod.metadata?.uid ?? '');
    this.#gcRequested = true;
  }
}
