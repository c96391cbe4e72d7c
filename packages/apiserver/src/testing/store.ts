// The object store behind the in-memory API server: one global resourceVersion counter as
// etcd's revision, a bounded history of changes for watches to resume from (upstream's watch
// cache), and the open watches.
import type { Json, JsonObject } from './patch.js';
import type { ResourceInfo } from './resources.js';

/** One change, as a watch sees it. @internal */
export interface StoreEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly info: ResourceInfo;
  readonly rv: number;
  readonly object: JsonObject;
  /** The object before a MODIFIED change, for selector transitions. */
  readonly old?: JsonObject;
}

/** An open watch, told of the changes of its resource. @internal */
export interface StoreWatcher {
  readonly info: ResourceInfo;
  readonly namespace?: string;
  onEvent(event: StoreEvent): void;
}

const keyOf = (info: ResourceInfo) => `${info.group}/${info.plural}`;
const idOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

/** @internal */
export class ObjectStore {
  private revision = 0;
  private readonly objects = new Map<string, Map<string, JsonObject>>();
  /** Per resource, as upstream keeps one watch cache per resource type. */
  private readonly history = new Map<ResourceInfo, StoreEvent[]>();
  /** Per resource, the newest revision no longer in its history (watches from older are too old). */
  private readonly compacted = new Map<ResourceInfo, number>();
  readonly watchers = new Set<StoreWatcher>();
  /** The revision of the last compact(), for resources without a history then. */
  private compactedAll = 0;

  constructor(private readonly historySize: number) {}

  get resourceVersion(): number {
    return this.revision;
  }

  /** The oldest resourceVersion a watch of `info` may start from. */
  oldestWatchable(info: ResourceInfo): number {
    return Math.max(this.compacted.get(info) ?? 0, this.compactedAll);
  }

  get(info: ResourceInfo, namespace: string | undefined, name: string): JsonObject | undefined {
    return this.objects.get(keyOf(info))?.get(idOf(namespace, name));
  }

  list(info: ResourceInfo, namespace?: string): JsonObject[] {
    const all = [...(this.objects.get(keyOf(info))?.values() ?? [])];
    const items = namespace === undefined ? all : all.filter((o) => metaOf(o).namespace === namespace);
    return items.sort((a, b) => {
      const ka = `${metaOf(a).namespace ?? ''}/${metaOf(a).name}`;
      const kb = `${metaOf(b).namespace ?? ''}/${metaOf(b).name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  }

  /** Stores `object` (new or changed) under a fresh resourceVersion and tells the watches. */
  put(info: ResourceInfo, object: JsonObject): JsonObject {
    const meta = metaOf(object);
    const id = idOf(meta.namespace, String(meta.name));
    let bucket = this.objects.get(keyOf(info));
    if (!bucket) {
      bucket = new Map();
      this.objects.set(keyOf(info), bucket);
    }
    const old = bucket.get(id);
    const rv = ++this.revision;
    const stored = structuredClone(object);
    (stored.metadata as JsonObject).resourceVersion = String(rv);
    bucket.set(id, stored);
    this.record({ type: old ? 'MODIFIED' : 'ADDED', info, rv, object: stored, ...(old ? { old } : {}) });
    return structuredClone(stored);
  }

  /** Removes an object; the DELETED event carries it at a fresh resourceVersion, as upstream. */
  remove(info: ResourceInfo, namespace: string | undefined, name: string): JsonObject | undefined {
    const bucket = this.objects.get(keyOf(info));
    const old = bucket?.get(idOf(namespace, name));
    if (!bucket || !old) return undefined;
    bucket.delete(idOf(namespace, name));
    const rv = ++this.revision;
    const gone = structuredClone(old);
    (gone.metadata as JsonObject).resourceVersion = String(rv);
    this.record({ type: 'DELETED', info, rv, object: gone });
    return structuredClone(gone);
  }

  /** The changes of `info` after `rv`, or undefined when `rv` is older than the history. */
  since(info: ResourceInfo, rv: number): StoreEvent[] | undefined {
    if (rv < this.oldestWatchable(info)) return undefined;
    return (this.history.get(info) ?? []).filter((e) => e.rv > rv);
  }

  /** Forgets the history (a compaction): watches from any older resourceVersion get 410. */
  compact(): void {
    this.history.clear();
    this.compactedAll = this.revision;
  }

  private record(event: StoreEvent): void {
    let list = this.history.get(event.info);
    if (!list) {
      list = [];
      this.history.set(event.info, list);
    }
    list.push(event);
    while (list.length > this.historySize) {
      const dropped = list.shift();
      if (dropped) this.compacted.set(event.info, dropped.rv);
    }
    for (const w of [...this.watchers]) {
      if (w.info !== event.info) continue;
      if (w.namespace !== undefined && metaOf(event.object).namespace !== w.namespace) continue;
      w.onEvent(event);
    }
  }
}

/** The metadata of a stored object. @internal */
export function metaOf(o: JsonObject): { name?: string; namespace?: string; [k: string]: Json | undefined } {
  const m = o.metadata;
  return m && typeof m === 'object' && !Array.isArray(m) ? (m as { name?: string; namespace?: string }) : {};
}
