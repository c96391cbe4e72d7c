// PodConfig merges the pods of many sources into one ordered stream of PodUpdate (upstream
// `pkg/kubelet/config/config.go`: PodConfig, podStorage, and the mux that feeds it).
import {
  AllSource,
  type Clock,
  ConfigFirstSeenAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  deepCopy,
  type EventRecorder,
  getPodFullName,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  type PodSourceName,
  type PodUpdate,
  podEventReference,
  RealClock,
} from '@kubelet-kit/core';
import { EventEmitter } from 'eventemitter3';
import { deepEqual } from './equal.js';
import { writable } from './mutable.js';
import type { PodSource, PodSourceSink } from './source.js';

/**
 * How merged changes are delivered (upstream `PodConfigNotificationMode`).
 * - `incremental`: REMOVE, ADD, UPDATE, DELETE, (an empty ADD on a source's first SET), RECONCILE.
 *   What the kubelet uses.
 * - `snapshotAndUpdates`: a SET of all sources' pods when pods were added or removed (or on a
 *   source's first SET), then UPDATE and DELETE.
 * - `snapshot`: a SET of all sources' pods on any change.
 *
 * @public
 */
export type PodConfigNotificationMode = 'incremental' | 'snapshotAndUpdates' | 'snapshot';

/**
 * The typed events of {@link PodConfig}.
 *
 * @public
 */
export interface PodConfigEvents {
  /** Every update, in stream order, at the moment it is produced. */
  update: (update: PodUpdate) => void;
}

/**
 * Options of {@link PodConfig}.
 *
 * @public
 */
export interface PodConfigOptions {
  /** Default `incremental`. */
  readonly mode?: PodConfigNotificationMode;
  /** Receives `FailedValidation` events for duplicate pod names. */
  readonly recorder?: EventRecorder;
  readonly logger?: Logger;
  /** Stamps the `kubernetes.io/config.seen` annotation. */
  readonly clock?: Clock;
  /**
   * Queue the updates for {@link PodConfig.updates} (default true). Turn it off when consuming
   * only the `update` events, or the queue grows without bound.
   */
  readonly bufferUpdates?: boolean;
  /**
   * Once more updates than this wait in the queue, a source's sink promise stays pending until
   * the consumer catches up (upstream's channel buffer of 50). Default 50.
   */
  readonly highWaterMark?: number;
}

/**
 * Options of {@link PodConfig.updates}.
 *
 * @public
 */
export interface PodConfigUpdatesOptions {
  /** Ends the iteration (without error) when aborted. */
  readonly signal?: AbortSignal;
}

interface MergeResult {
  adds: Pod[];
  updates: Pod[];
  deletes: Pod[];
  removes: Pod[];
  reconciles: Pod[];
}

const localAnnotations = [ConfigSourceAnnotationKey, ConfigMirrorAnnotationKey, ConfigFirstSeenAnnotationKey];

function isLocalAnnotationKey(key: string): boolean {
  return localAnnotations.includes(key);
}

/** Equal but for the kubelet's own annotations; an absent map is an empty one. */
function isAnnotationMapEqual(
  existing: Record<string, string> | undefined,
  candidate: Record<string, string> | undefined,
): boolean {
  const e = existing ?? {};
  const c = candidate ?? {};
  for (const [k, v] of Object.entries(c)) {
    if (isLocalAnnotationKey(k) || v === undefined) continue;
    if (e[k] !== v) return false;
  }
  for (const k of Object.keys(e)) {
    if (isLocalAnnotationKey(k) || e[k] === undefined) continue;
    if (c[k] === undefined) return false;
  }
  return true;
}

function podsDifferSemantically(existing: Pod, ref: Pod): boolean {
  const em = existing.metadata ?? {};
  const rm = ref.metadata ?? {};
  return !(
    deepEqual(existing.spec, ref.spec) &&
    deepEqual(em.labels, rm.labels) &&
    deepEqual(em.deletionTimestamp, rm.deletionTimestamp) &&
    deepEqual(em.deletionGracePeriodSeconds, rm.deletionGracePeriodSeconds) &&
    isAnnotationMapEqual(em.annotations, rm.annotations)
  );
}

function clone<T>(value: T): T {
  return value === undefined ? value : deepCopy(value);
}

/** RFC 3339 with nanoseconds and trailing zeros trimmed, as Go's `time.RFC3339Nano`. */
function formatRFC3339Nano(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  return iso.replace(/\.(\d*?)0*Z$/, (_m, digits: string) => (digits ? `.${digits}Z` : 'Z'));
}

type Classification = 'update' | 'reconcile' | 'delete' | undefined;

/**
 * Updates the stored pod from `ref` (upstream `checkAndUpdatePod`): a meaningful change is an
 * update, or a graceful delete when `ref` has a deletion timestamp; a status-only change is a
 * reconcile. `ref` is not modified.
 */
function checkAndUpdatePod(existing: Pod, ref: Pod, source: string): Classification {
  if (!podsDifferSemantically(existing, ref)) {
    if (!deepEqual(existing.status, ref.status)) {
      writable(existing).status = clone(ref.status);
      return 'reconcile';
    }
    return undefined;
  }
  existing.metadata ??= {};
  const em = writable(existing.metadata);
  const rm = ref.metadata ?? {};
  const annotations: Record<string, string> = {
    ...(rm.annotations ?? {}),
    [ConfigSourceAnnotationKey]: source,
    [ConfigFirstSeenAnnotationKey]: em.annotations?.[ConfigFirstSeenAnnotationKey] ?? '',
  };
  for (const key of localAnnotations) {
    const value = em.annotations?.[key];
    if (value !== undefined) annotations[key] = value;
  }
  writable(existing).spec = clone(ref.spec);
  em.labels = clone(rm.labels);
  em.deletionTimestamp = rm.deletionTimestamp;
  em.deletionGracePeriodSeconds = rm.deletionGracePeriodSeconds;
  writable(existing).status = clone(ref.status);
  em.annotations = annotations;
  return rm.deletionTimestamp != null ? 'delete' : 'update';
}

/** A FIFO with O(1) shift. */
class Queue<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined as T;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}

/**
 * Merges many pod sources into one ordered stream of `PodUpdate`, with upstream's
 * semantics: per-source storage keyed by UID, changes classified against the stored pod, a
 * fixed emit order, and `seenAllSources` once every source has sent a SET.
 *
 * Delivery: every update is emitted as an `update` event when it is produced and, unless
 * `bufferUpdates` is off, queued for the single consumer of {@link PodConfig.updates}. The queue
 * is unbounded, so a slow consumer never loses or reorders anything; a source that awaits its
 * sink is held back while more than `highWaterMark` updates wait (back-pressure, like upstream's
 * blocking channel), and sources that do not await still lose nothing.
 *
 * @public
 */
export class PodConfig extends EventEmitter<PodConfigEvents> {
  readonly mode: PodConfigNotificationMode;
  readonly #recorder: EventRecorder;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #buffer: boolean;
  readonly #highWaterMark: number;
  readonly #pods = new Map<PodSourceName, Map<string, Pod>>();
  readonly #sources = new Set<PodSourceName>();
  readonly #sourcesSeen = new Set<PodSourceName>();
  readonly #queue = new Queue<PodUpdate>();
  readonly #started: PodSource[] = [];
  #waiters: (() => void)[] = [];
  #wake: (() => void) | undefined;
  #consuming = false;
  #closed = false;

  constructor(options: PodConfigOptions = {}) {
    super();
    this.mode = options.mode ?? 'incremental';
    if (!['incremental', 'snapshotAndUpdates', 'snapshot'].includes(this.mode)) {
      throw new Error(`unsupported PodConfigNotificationMode: ${String(this.mode)}`);
    }
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#logger = options.logger ?? noopLogger;
    this.#clock = options.clock ?? new RealClock();
    this.#buffer = options.bufferUpdates ?? true;
    this.#highWaterMark = Math.max(0, options.highWaterMark ?? 50);
  }

  /**
   * Registers `source` and returns its sink (upstream `Channel`). Updates sent through it are
   * merged at once, in call order across all sources.
   */
  channel(source: PodSourceName): PodSourceSink {
    this.#sources.add(source);
    return (update: PodUpdate) => {
      if (this.#closed) return;
      this.merge(source, update);
      return this.#room();
    };
  }

  /** Registers a source under its name and starts it; {@link PodConfig.stop} stops it. */
  async addSource(source: PodSource): Promise<void> {
    const sink = this.channel(source.name);
    this.#started.push(source);
    await source.start(sink);
  }

  /**
   * True when `seen` holds every registered source and every registered source has sent at least
   * one SET (upstream `SeenAllSources`).
   */
  seenAllSources(seen: Iterable<PodSourceName>): boolean {
    const seenSet = seen instanceof Set ? (seen as ReadonlySet<string>) : new Set(seen);
    for (const source of this.#sources) {
      if (!seenSet.has(source) || !this.#sourcesSeen.has(source)) return false;
    }
    return true;
  }

  /** The registered source names. */
  get sources(): ReadonlySet<PodSourceName> {
    return this.#sources;
  }

  /** Updates waiting for the consumer of {@link PodConfig.updates}. */
  get pendingUpdates(): number {
    return this.#queue.length;
  }

  /** Emits a SET of every pod of every source with source `*` (upstream `Sync`). */
  sync(): void {
    this.#emit({ op: 'SET', pods: this.mergedState(), source: AllSource });
  }

  /** Deep copies of every stored pod, source by source. */
  mergedState(): Pod[] {
    const pods: Pod[] = [];
    for (const sourcePods of this.#pods.values()) {
      for (const pod of sourcePods.values()) pods.push(deepCopy(pod));
    }
    return pods;
  }

  /**
   * The stream of updates, from the first one produced (updates are queued from construction).
   * One consumer at a time; it ends on {@link PodConfig.stop} or when `signal` aborts.
   */
  updates(options: PodConfigUpdatesOptions = {}): AsyncIterableIterator<PodUpdate> {
    if (!this.#buffer) throw new Error('PodConfig: updates() needs bufferUpdates');
    if (this.#consuming) throw new Error('PodConfig: updates() already has a consumer');
    this.#consuming = true;
    return this.#iterate(options.signal);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<PodUpdate> {
    return this.updates();
  }

  /** Stops every source added with {@link PodConfig.addSource} and ends the update stream. */
  async stop(): Promise<void> {
    this.#closed = true;
    // Release held-back sources first, or a source awaiting its sink could never stop.
    this.#releaseWaiters(true);
    this.#wake?.();
    await Promise.allSettled(this.#started.map((s) => s.stop()));
  }

  /**
   * Merges one update of `source` and emits the resulting updates (upstream `podStorage.Merge`).
   * Sources normally go through {@link PodConfig.channel}; this is the same without registering.
   */
  merge(source: PodSourceName, update: PodUpdate): void {
    const seenBefore = this.#sourcesSeen.has(source);
    const r = this.#mergeInto(source, update);
    const firstSet = !seenBefore && this.#sourcesSeen.has(source);
    const out = (op: PodUpdate['op'], pods: Pod[]) =>
      this.#emit({ op, pods: pods.map((p) => deepCopy(p)), source });
    switch (this.mode) {
      case 'incremental':
        if (r.removes.length > 0) out('REMOVE', r.removes);
        if (r.adds.length > 0) out('ADD', r.adds);
        if (r.updates.length > 0) out('UPDATE', r.updates);
        if (r.deletes.length > 0) out('DELETE', r.deletes);
        // An empty ADD on the first SET tells the consumer the source is ready.
        if (firstSet && r.adds.length === 0 && r.updates.length === 0 && r.deletes.length === 0)
          out('ADD', []);
        if (r.reconciles.length > 0) out('RECONCILE', r.reconciles);
        break;
      case 'snapshotAndUpdates':
        if (r.removes.length > 0 || r.adds.length > 0 || firstSet) {
          this.#emit({ op: 'SET', pods: this.mergedState(), source });
        }
        if (r.updates.length > 0) out('UPDATE', r.updates);
        if (r.deletes.length > 0) out('DELETE', r.deletes);
        break;
      case 'snapshot':
        if (
          r.updates.length > 0 ||
          r.deletes.length > 0 ||
          r.adds.length > 0 ||
          r.removes.length > 0 ||
          firstSet
        ) {
          this.#emit({ op: 'SET', pods: this.mergedState(), source });
        }
        break;
    }
  }

  #mergeInto(source: PodSourceName, update: PodUpdate): MergeResult {
    const r: MergeResult = { adds: [], updates: [], deletes: [], removes: [], reconciles: [] };
    let pods = this.#pods.get(source) ?? new Map<string, Pod>();
    const updatePods = (newPods: readonly Pod[], oldPods: Map<string, Pod>, into: Map<string, Pod>) => {
      for (const ref of this.#filterInvalidPods(newPods, source)) {
        const uid = ref.metadata?.uid ?? '';
        const existing = oldPods.get(uid);
        if (existing) {
          into.set(uid, existing);
          const kind = checkAndUpdatePod(existing, ref, source);
          if (kind === 'update') r.updates.push(existing);
          else if (kind === 'reconcile') r.reconciles.push(existing);
          else if (kind === 'delete') r.deletes.push(existing);
          continue;
        }
        const stored = deepCopy(ref);
        stored.metadata ??= {};
        const meta = stored.metadata;
        meta.annotations = {
          ...(meta.annotations ?? {}),
          [ConfigSourceAnnotationKey]: source,
          [ConfigFirstSeenAnnotationKey]: formatRFC3339Nano(this.#clock.now()),
        };
        into.set(uid, stored);
        r.adds.push(stored);
      }
    };
    const incoming = update.pods ?? [];
    switch (update.op) {
      case 'ADD':
      case 'UPDATE':
      case 'DELETE':
        this.#logger.debug({ source, op: update.op, pods: incoming.length }, 'Merging pods from source');
        updatePods(incoming, pods, pods);
        break;
      case 'REMOVE':
        this.#logger.debug({ source, pods: incoming.length }, 'Removing pods from source');
        for (const value of incoming) {
          const uid = value.metadata?.uid ?? '';
          const existing = pods.get(uid);
          if (existing) {
            pods.delete(uid);
            r.removes.push(existing);
          }
        }
        break;
      case 'SET': {
        this.#logger.debug({ source, pods: incoming.length }, 'Setting pods for source');
        this.#sourcesSeen.add(source);
        const oldPods = pods;
        pods = new Map();
        updatePods(incoming, oldPods, pods);
        for (const [uid, existing] of oldPods) {
          if (!pods.has(uid)) r.removes.push(existing);
        }
        break;
      }
      default:
        this.#logger.info({ source, op: String(update.op) }, 'Received invalid update type');
    }
    this.#pods.set(source, pods);
    return r;
  }

  /** Drops any pod whose full name repeats an earlier one in the same batch (upstream `filterInvalidPods`). */
  #filterInvalidPods(pods: readonly Pod[], source: string): Pod[] {
    const names = new Set<string>();
    const filtered: Pod[] = [];
    pods.forEach((pod, index) => {
      const fullName = getPodFullName(pod);
      if (names.has(fullName)) {
        const meta = pod.metadata ?? {};
        this.#logger.info(
          { index, pod: fullName, source },
          'Pod failed validation due to duplicate pod name, ignoring',
        );
        this.#recorder.event(
          podEventReference(pod),
          'Warning',
          'FailedValidation',
          `Error validating pod ${fullName}(${meta.uid ?? ''}) from ${source} due to duplicate pod name ${JSON.stringify(meta.name ?? '')}, ignoring`,
        );
        return;
      }
      names.add(fullName);
      filtered.push(pod);
    });
    return filtered;
  }

  #emit(update: PodUpdate): void {
    if (this.#buffer) {
      this.#queue.push(update);
      this.#wake?.();
    }
    try {
      this.emit('update', update);
    } catch (err) {
      // A listener's bug must not break the merge of the source that triggered it.
      this.#logger.error({ err }, 'PodConfig update listener threw');
    }
  }

  #room(): Promise<void> | undefined {
    if (!this.#buffer || this.#queue.length <= this.#highWaterMark) return undefined;
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  #releaseWaiters(all = false): void {
    if (this.#waiters.length === 0) return;
    if (!all && this.#queue.length > this.#highWaterMark) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  async *#iterate(signal: AbortSignal | undefined): AsyncGenerator<PodUpdate, void, undefined> {
    const onAbort = () => this.#wake?.();
    signal?.addEventListener('abort', onAbort);
    try {
      for (;;) {
        if (signal?.aborted) return;
        const next = this.#queue.shift();
        if (next !== undefined) {
          this.#releaseWaiters();
          yield next;
          continue;
        }
        if (this.#closed) return;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.#consuming = false;
    }
  }
}
