import { setMaxListeners } from 'node:events';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  Backoff,
  type Clock,
  ConfigFirstSeenAnnotationKey,
  type EventRecorder,
  getPodFullName,
  isMirrorPod,
  isStaticPod,
  type Logger,
  type MirrorClient,
  noopEventRecorder,
  noopLogger,
  type ObjectGetter,
  type Pod,
  type PodStatus,
  type PodStatusCache,
  type PodUpdate,
  podSyncResultError,
  type Runtime,
  type RuntimePod,
  type RuntimePodStatus,
  type Secret,
  type Subpather,
  type SyncPodType,
  type SyncResult,
  type Timer,
} from '@kubelet-kit/core';
import { convertPodStatusToRunningPod } from '@kubelet-kit/kuberuntime';
import { isMirrorPodOf, type PodManager } from '@kubelet-kit/pod-manager';
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
import { cleanPodSubPaths, containerSubPathDirectoryName } from '@kubelet-kit/volume-manager';
import PQueue from 'p-queue';
import { admitPod, type NodeAllocatable, PodResourceUsage } from './admission.js';
import { generateAPIPodStatus } from './api-pod-status.js';
import type {
  PlegView,
  PodConfigView,
  ProbeManagerView,
  StatusManagerView,
  VolumeManagerView,
} from './deps.js';
import type { KubeletMetrics } from './metrics.js';
import type { NodeInfo } from './node-info.js';
import { admitPodFeatures, type PodFeatureSupport } from './pod-feature-admission.js';
import { ReasonCache } from './reason-cache.js';
import type { SysctlAllowlist } from './sysctl.js';

/** Options of {@link Kubelet}. */
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
}

const syncTickMs = 1000;
const noPodFeatures: PodFeatureSupport = {
  appArmorHostError: 'AppArmor is not enabled on the host',
  supplementalGroupsPolicy: () => false,
};
const requestedInspectionDelayMs = 5;

/** A step that started, stopped or created something the PLEG should look at. */
function changedContainers(r: SyncResult): boolean {
  return r.error === undefined && r.action !== 'ConfigPodSandbox';
}
const housekeepingPeriodMs = 2000;

function podRef(pod: Pod): { uid: string; name: string; namespace: string } {
  return {
    uid: pod.metadata?.uid ?? '',
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? '',
  };
}

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
 */
export class Kubelet implements PodSyncer {
  readonly podWorkers: PodWorkers;
  readonly reasonCache = new ReasonCache();
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
  /** Pods with an active deadline: the sync tick checks them (the rest need no look). */
  readonly #deadlinePods = new Set<string>();
  readonly #creations: PQueue;
  #configLoop: Promise<void> | undefined;
  #inspectionTimer: Timer | undefined;
  /** Pods to read once the timer fires, by UID. */
  readonly #inspections = new Map<
    string,
    { uid: string; name: string; namespace: string; status?: RuntimePodStatus; dueAt: number }
  >();
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
    this.#inspectionTimer?.cancel();
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
          this.podWorkers.updatePod({
            updateType: 'update',
            pod: staticPod,
            mirrorPod: pod,
            startTime: start,
          });
        }
        continue;
      }
      const uid = pod.metadata?.uid ?? '';
      // A pod that is being terminated, or that arrives with a terminal phase (it finished
      // before this agent started), is not admitted again: its worker only finishes it.
      if (!this.podWorkers.isPodTerminationRequested(uid) && !isPodPhaseTerminal(pod.status?.phase)) {
        activePods ??= this.#activePods().filter((p) => p.metadata?.uid !== uid);
        usage ??= new PodResourceUsage(activePods);
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
      this.#trackActiveDeadline(pod);
      this.podWorkers.updatePod({
        updateType: 'create',
        pod,
        ...(mirrorPod ? { mirrorPod } : {}),
        startTime: start,
      });
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
      this.#trackActiveDeadline(staticPod);
      this.podWorkers.updatePod({
        updateType: 'update',
        pod: staticPod,
        ...(mirrorPod ? { mirrorPod } : {}),
        startTime: start,
      });
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
          this.podWorkers.updatePod({
            updateType: 'update',
            pod: staticPod,
            ...(mirrorPod ? { mirrorPod } : {}),
            startTime: start,
          });
        }
        continue;
      }
      if (!this.#o.podConfig.seenAllSources()) {
        // As upstream: do not kill while some source has not told us what it wants.
        this.#log.info({ pod: getPodFullName(pod) }, 'skipping delete because sources are not ready yet');
        continue;
      }
      this.podWorkers.updatePod({ updateType: 'kill', pod, startTime: start });
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
      this.podWorkers.updatePod({
        updateType: 'sync',
        pod: target,
        ...(mirrorPod ? { mirrorPod } : {}),
        startTime: start,
      });
    }
  }

  #syncByUid(uid: string): void {
    const pod = this.#o.podManager.getPodByUID(uid);
    if (!pod) return;
    const { mirrorPod } = this.#o.podManager.getPodAndMirrorPod(pod);
    this.podWorkers.updatePod({
      updateType: 'sync',
      pod,
      ...(mirrorPod ? { mirrorPod } : {}),
      startTime: this.#clock.now(),
    });
  }

  #onPlegEvent(event: { readonly id: string; readonly type: string }): void {
    if (event.type === 'ContainerRemoved') return;
    this.#syncByUid(event.id);
    if (event.type === 'ContainerDied') this.#gcRequested = true;
  }

  /**
   * Asks the PLEG to read a pod shortly after this agent changed its containers, so the new state
   * reaches the pod's status without waiting for the next 1 s relist (upstream waits). Requests
   * within the delay share one round of reads; the delay also puts the read after the end of the
   * sync, which the pod's worker waits to see a status newer than. A PLEG that cannot read single
   * pods relists instead.
   */
  #requestInspection(pod: { uid: string; name: string; namespace: string }, status?: RuntimePodStatus): void {
    const pleg = this.#o.pleg;
    if (this.#abort.signal.aborted) {
      pleg.releasePod?.(pod.uid);
      return;
    }
    // A status the runtime's sync reported spares the read, unless an earlier change of the pod
    // still waits for one.
    const pending = this.#inspections.get(pod.uid);
    const known = status && !(pending && !pending.status) ? status : undefined;
    // The pod's worker records the end of its sync right after this request, and waits for a
    // cache entry strictly newer than that: the inspection is timed by the clock, not by the
    // timer alone (a timer armed late in a long task can fire within the same millisecond).
    const dueAt = this.#clock.now() + requestedInspectionDelayMs;
    const { uid, name, namespace } = pod;
    // Re-inserted, so that the map stays in the order of the requests' due times.
    this.#inspections.delete(uid);
    this.#inspections.set(uid, { uid, name, namespace, ...(known ? { status: known } : {}), dueAt });
    if (!this.#inspectionTimer) this.#armInspectionTimer(requestedInspectionDelayMs);
  }

  #armInspectionTimer(delayMs: number): void {
    this.#inspectionTimer = this.#clock.setTimeout(() => {
      this.#inspectionTimer = undefined;
      const now = this.#clock.now();
      const pods: { uid: string; name: string; namespace: string; status?: RuntimePodStatus }[] = [];
      let nextDue: number | undefined;
      // Oldest requests first (a pod's newer request replaces its entry at the end).
      for (const [uid, entry] of this.#inspections) {
        if (entry.dueAt > now) {
          nextDue = entry.dueAt;
          break;
        }
        const { dueAt: _, ...ref } = entry;
        pods.push(ref);
        this.#inspections.delete(uid);
      }
      if (nextDue !== undefined) this.#armInspectionTimer(nextDue - now);
      if (pods.length === 0) return;
      const pleg = this.#o.pleg;
      const read = pleg.inspectPods ? pleg.inspectPods(pods) : pleg.relist?.();
      read?.catch((err: unknown) => this.#log.warn({ err: String(err) }, 'requested pod inspection failed'));
    }, delayMs);
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
    if (this.#deadlinePods.size === 0) return;
    const dueSet = new Set(due);
    for (const uid of this.#deadlinePods) {
      const pod = this.#o.podManager.getPodByUID(uid);
      if (!pod) this.#deadlinePods.delete(uid);
      else if (!dueSet.has(uid) && this.#pastActiveDeadline(pod)) this.#syncByUid(uid);
    }
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

  /** Keeps {@link Kubelet.#deadlinePods} to the pods that set `activeDeadlineSeconds`. */
  #trackActiveDeadline(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (pod.spec?.activeDeadlineSeconds != null) this.#deadlinePods.add(uid);
    else this.#deadlinePods.delete(uid);
  }

  #activePods(): Pod[] {
    return this.#o.podManager
      .getPods()
      .filter((p) => !this.podWorkers.isPodKnownTerminated(p.metadata?.uid ?? ''))
      .filter((p) => !isPodPhaseTerminal(this.#o.statusManager.getPodPhase(p.metadata?.uid ?? '')));
  }

  #rejectPod(pod: Pod, reason: string, message: string): void {
    this.#recorder.event(
      {
        kind: 'Pod',
        namespace: pod.metadata?.namespace ?? '',
        name: pod.metadata?.name ?? '',
        uid: pod.metadata?.uid ?? '',
      },
      'Warning',
      reason,
      message,
    );
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

  /** Kills what no source wants, forgets finished pods, restarts pods whose UID came back. */
  async handlePodCleanups(): Promise<void> {
    const o = this.#o;
    const allPods = o.podManager.getPods();
    const workingPods = this.podWorkers.syncKnownPods(allPods);
    const desired = new Set(allPods.map((p) => p.metadata?.uid ?? ''));
    // Pods whose worker is setting them up, running or stopping them: the rest are probed no more.
    const possiblyRunning = new Set<string>();
    for (const [uid, sync] of workingPods) if (sync.state !== 'terminated') possiblyRunning.add(uid);
    o.probeManager?.cleanupPods(possiblyRunning);
    // Pods a source wants or a worker still holds: their statuses and directories stay.
    const keep = new Set<string>([...desired, ...workingPods.keys()]);
    o.statusManager.removeOrphanedStatuses(keep);

    const runningPods = await o.runtime.getPods(false, this.#abort.signal);
    let containers = 0;
    for (const rp of runningPods) {
      containers += rp.containers.length;
      // A worker that is running or stopping the pod is in charge of it.
      if (possiblyRunning.has(rp.id)) continue;
      // Running containers of a pod no source wants, whose worker (if any) is done: a leftover of
      // a removed pod or of an earlier run.
      if (desired.has(rp.id)) continue;
      this.#log.info(
        { pod: `${rp.name}_${rp.namespace}`, uid: rp.id },
        'cleaning up runtime pod that no source wants',
      );
      this.podWorkers.updatePod({ updateType: 'kill', runningPod: rp });
    }
    o.metrics?.runningPods.set(
      runningPods.filter((p) => p.sandboxes.some((s) => s.state === 'running')).length,
    );
    o.metrics?.runningContainers.set({ container_state: 'running' }, containers);

    await this.#cleanupOrphanedPodDirs(keep);
    await this.#deleteOrphanedMirrorPods();

    // A UID whose worker was just purged (a create arrived while it was terminating) starts again.
    for (const pod of allPods) {
      const uid = pod.metadata?.uid ?? '';
      if (workingPods.has(uid)) continue;
      if (isPodPhaseTerminal(o.statusManager.getPodPhase(uid))) continue;
      const { mirrorPod } = o.podManager.getPodAndMirrorPod(pod);
      this.podWorkers.updatePod({
        updateType: 'create',
        pod,
        ...(mirrorPod ? { mirrorPod } : {}),
        startTime: this.#clock.now(),
      });
    }

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

  async #cleanupOrphanedPodDirs(keep: ReadonlySet<string>): Promise<void> {
    const podsDir = path.join(this.#o.rootDirectory, 'pods');
    let entries: string[];
    try {
      entries = await fs.readdir(podsDir);
    } catch {
      return;
    }
    for (const uid of entries) {
      if (keep.has(uid)) continue;
      if (this.podWorkers.couldHaveRunningContainers(uid)) continue;
      const volumes = path.join(podsDir, uid, 'volumes');
      // Never remove a directory that may still hold a mount: the volume manager unmounts first.
      const hasVolumes = await fs
        .readdir(volumes)
        .then((v) => v.length > 0)
        .catch(() => false);
      if (hasVolumes) continue;
      // Bind mounts of subPaths hold volume files (or, on another volume type, host files):
      // unmount them first, and never remove a directory that still has one (upstream
      // cleanupOrphanedPodDirs keeps a pod with volume-subpaths on disk).
      const podDir = path.join(podsDir, uid);
      if (this.#o.subpather) {
        await cleanPodSubPaths(this.#o.subpather, podDir).catch((err: unknown) =>
          this.#log.warn({ pod: uid, err: String(err) }, 'failed to clean subpath mounts of an orphaned pod'),
        );
      }
      const subPathsLeft = await fs
        .access(path.join(podDir, containerSubPathDirectoryName))
        .then(() => true)
        .catch(() => false);
      if (subPathsLeft) {
        this.#log.warn({ pod: uid }, 'orphaned pod found, but volume subpaths are still present on disk');
        continue;
      }
      this.#podDirsMade.delete(uid);
      await fs.rm(path.join(podsDir, uid), { recursive: true, force: true }).catch(() => {});
    }
  }

  /**
   * Upstream's active deadline handler: the pod has run `activeDeadlineSeconds` since its start
   * time (as the status manager, or else the pod, records it).
   */
  #pastActiveDeadline(pod: Pod): boolean {
    const seconds = pod.spec?.activeDeadlineSeconds;
    if (seconds == null) return false;
    const startTime = (this.#o.statusManager.getPodStatus(pod.metadata?.uid ?? '') ?? pod.status)?.startTime;
    const start = startTime ? Date.parse(startTime) : Number.NaN;
    if (Number.isNaN(start)) return false;
    return this.#clock.now() - start >= seconds * 1000;
  }

  /** Upstream `activeDeadlineHandler.ShouldEvict`: fail a pod past its deadline, with an event. */
  #shouldEvict(pod: Pod): { reason: string; message: string } | undefined {
    if (!this.#pastActiveDeadline(pod)) return undefined;
    const reason = 'DeadlineExceeded';
    const message = 'Pod was active on the node longer than the specified deadline';
    this.#recorder.event({ kind: 'Pod', ...podRef(pod) }, 'Normal', reason, message);
    return { reason, message };
  }

  #apiStatus(pod: Pod, podStatus: RuntimePodStatus, podIsTerminal: boolean): PodStatus {
    const o = this.#o;
    const uid = pod.metadata?.uid ?? '';
    return generateAPIPodStatus({
      pod,
      podStatus,
      podIsTerminal,
      cachedStatus: o.statusManager.getPodStatus(uid),
      reasonCache: this.reasonCache,
      nodeIPs: o.nodeIPs,
      shouldEvict: (p) => this.#shouldEvict(p),
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

  /**
   * Upstream `tryReconcileMirrorPods`: a static pod has a mirror pod on the API server that
   * matches it. One that is being deleted or mirrors another version of the pod is deleted and
   * made again. Failures are logged; the next sync tries again.
   */
  async #tryReconcileMirrorPods(staticPod: Pod, mirrorPod: Pod | undefined): Promise<void> {
    const client = this.#o.mirrorClient;
    if (!client || !isStaticPod(staticPod)) return;
    const fullName = getPodFullName(staticPod);
    let deleted = false;
    if (mirrorPod && (mirrorPod.metadata?.deletionTimestamp || !isMirrorPodOf(mirrorPod, staticPod))) {
      this.#log.info(
        { pod: fullName, mirrorPodUid: mirrorPod.metadata?.uid },
        'deleting a mirror pod that does not match its static pod',
      );
      deleted = await client.deleteMirrorPod(fullName, mirrorPod.metadata?.uid).catch((err: unknown) => {
        this.#log.error({ pod: fullName, err: String(err) }, 'failed deleting mirror pod');
        return false;
      });
    }
    if (mirrorPod && !deleted) return;
    await client
      .createMirrorPod(staticPod)
      .catch((err: unknown) =>
        this.#log.error({ pod: fullName, err: String(err) }, 'failed creating a mirror pod'),
      );
  }

  /** Upstream `deleteOrphanedMirrorPods`: mirror pods whose static pod is gone, unless it is still stopping. */
  async #deleteOrphanedMirrorPods(): Promise<void> {
    const client = this.#o.mirrorClient;
    if (!client) return;
    for (const fullName of this.#o.podManager.getPodsAndMirrorPods().orphanedMirrorPodFullnames) {
      if (this.podWorkers.isPodForMirrorPodTerminatingByFullName(fullName)) continue;
      await client
        .deleteMirrorPod(fullName, undefined)
        .catch((err: unknown) =>
          this.#log.error({ pod: fullName, err: String(err) }, 'failed deleting mirror pod'),
        );
    }
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
        throw new Error('network is not ready: container runtime network not ready');
      }
      await this.#tryReconcileMirrorPods(pod, mirrorPod);
      if (!this.#podDirsMade.has(uid)) {
        // Synchronous: two small directories, made once per pod (the thread pool's hand-offs cost
        // more than the calls).
        fsSync.mkdirSync(path.join(o.rootDirectory, 'pods', uid, 'volumes'), { recursive: true });
        fsSync.mkdirSync(path.join(o.rootDirectory, 'pods', uid, 'plugins'), { recursive: true });
        // Made once per pod (upstream makes them on every sync): only this agent removes them.
        this.#podDirsMade.add(uid);
      }
      if (o.volumeManager) {
        try {
          await o.volumeManager.waitForAttachAndMount(pod, { signal: ctx.signal });
        } catch (err) {
          this.#recorder.event(
            { kind: 'Pod', namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid },
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
        if (held && changed) this.#requestInspection(podRef(pod), statusAfter);
        else if (held) o.pleg.releasePod?.(uid);
      }
      // A new start failure (CrashLoopBackOff, ErrImagePull, …) shows in the status at once, not
      // only from the next sync (which, for a backoff, is when the wait ends).
      if (this.reasonCache.update(uid, result))
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
    if (result.syncResults.some(changedContainers)) this.#requestInspection(podRef(pod));
    const err = podSyncResultError(result);
    if (err) {
      this.#recorder.event(
        { kind: 'Pod', ...podRef(pod) },
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
      this.#requestInspection({ uid: runningPod.id, name: runningPod.name, namespace: runningPod.namespace });
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
    o.statusManager.terminatePod(pod);
    this.reasonCache.removePod(pod.metadata?.uid ?? '');
    this.#startedPods.delete(pod.metadata?.uid ?? '');
    this.#podDirsMade.delete(pod.metadata?.uid ?? '');
    this.#gcRequested = true;
  }
}
