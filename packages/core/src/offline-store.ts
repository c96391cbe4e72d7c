// The local store the API-server adapters write through, so a node keeps its pods and the
// objects they need while the API server is away and across restarts (the role of KubeEdge's
// MetaManager meta table: one row per object, keyed by kind and key, the value as JSON).

/**
 * What an {@link OfflineStore} holds, one namespace of keys each:
 * - `Pod`: pods bound to the node, keyed `<namespace>/<name>`;
 * - `PodStatus`: the last status the agent sent for a pod, keyed by the pod's UID;
 * - `ConfigMap`, `Secret`: keyed `<namespace>/<name>`;
 * - `ServiceAccountToken`: issued tokens, keyed by the token manager's cache key;
 * - `Node`: this node's Node object, keyed by its name;
 * - `Service`: the cluster's Services for container environment variables, keyed
 *   `<namespace>/<name>`;
 * - `Event`: events waiting for the API server, keyed so that keys sort in the order the events
 *   were made.
 *
 * @public
 */
export type OfflineStoreKind =
  | 'Pod'
  | 'PodStatus'
  | 'ConfigMap'
  | 'Secret'
  | 'ServiceAccountToken'
  | 'Node'
  | 'Service'
  | 'Event';

/**
 * One stored value and its key.
 *
 * @public
 */
export interface OfflineStoreEntry<T = unknown> {
  readonly key: string;
  readonly value: T;
}

/**
 * A local key/value store of API objects, pluggable: the default keeps one file per object on
 * disk (`DiskOfflineStore` in `@kubelet-kit/apiserver`), {@link InMemoryOfflineStore} keeps them
 * in memory. Values are plain JSON. Writes of one key land in the order they were made; a
 * `get` or `list` sees every write that resolved before it. Errors reject (a caller logs them and
 * goes on: the store is a fallback, never the source of truth while the API server answers).
 *
 * @public
 */
export interface OfflineStore {
  get<T>(kind: OfflineStoreKind, key: string): Promise<T | undefined>;
  list<T>(kind: OfflineStoreKind): Promise<Array<OfflineStoreEntry<T>>>;
  put(kind: OfflineStoreKind, key: string, value: unknown): Promise<void>;
  /** Removes the key; a missing key is no error. */
  delete(kind: OfflineStoreKind, key: string): Promise<void>;
}

/**
 * An {@link OfflineStore} in memory (values deep-copied in and out): for tests, and for a caller
 * that wants offline operation within one process but nothing on disk.
 *
 * @public
 */
export class InMemoryOfflineStore implements OfflineStore {
  readonly #kinds = new Map<OfflineStoreKind, Map<string, string>>();

  #of(kind: OfflineStoreKind): Map<string, string> {
    let m = this.#kinds.get(kind);
    if (!m) {
      m = new Map();
      this.#kinds.set(kind, m);
    }
    return m;
  }

  async get<T>(kind: OfflineStoreKind, key: string): Promise<T | undefined> {
    const raw = this.#kinds.get(kind)?.get(key);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }

  async list<T>(kind: OfflineStoreKind): Promise<Array<OfflineStoreEntry<T>>> {
    return [...(this.#kinds.get(kind) ?? new Map<string, string>())].map(([key, raw]) => ({
      key,
      value: JSON.parse(raw) as T,
    }));
  }

  async put(kind: OfflineStoreKind, key: string, value: unknown): Promise<void> {
    this.#of(kind).set(key, JSON.stringify(value));
  }

  async delete(kind: OfflineStoreKind, key: string): Promise<void> {
    this.#kinds.get(kind)?.delete(key);
  }
}
