// A collection a reflector mirrors, written through to the offline store: one entry per object,
// unchanged objects (same resourceVersion) not written again, and a marker once a whole list
// was stored, so a reader after a restart knows the stored set is complete.

import type { Logger, OfflineStore, OfflineStoreKind } from '@kubelet-kit/core';
import { asError } from './api-errors.js';

/** The marker's key: object keys are `<namespace>/<name>`, which never start with `~`. */
const listedKey = '~listed';

function resourceVersionOf(obj: unknown): string | undefined {
  const rv = (obj as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof rv === 'string' ? rv : undefined;
}

/** Writes a mirrored collection through to the store; store failures are logged, never thrown. */
export class OfflineMirror<T> {
  readonly #store: OfflineStore;
  readonly #kind: OfflineStoreKind;
  readonly #logger: Logger;
  readonly #persisted = new Map<string, string | undefined>();
  #loaded: Promise<Map<string, T> | undefined> | undefined;
  readonly #writes = new Set<Promise<void>>();

  constructor(store: OfflineStore, kind: OfflineStoreKind, logger: Logger) {
    this.#store = store;
    this.#kind = kind;
    this.#logger = logger;
  }

  /** The stored objects by key, or undefined when no whole list was ever stored. */
  load(): Promise<Map<string, T> | undefined> {
    this.#loaded ??= (async () => {
      try {
        const entries = await this.#store.list<T>(this.#kind);
        if (!entries.some((e) => e.key === listedKey)) return undefined;
        const out = new Map<string, T>();
        for (const { key, value } of entries) {
          if (key === listedKey) continue;
          this.#persisted.set(key, resourceVersionOf(value));
          out.set(key, value);
        }
        return out;
      } catch (err) {
        this.#logger.warn({ kind: this.#kind, err: asError(err).message }, 'offline store: reading failed');
        return undefined;
      }
    })();
    return this.#loaded;
  }

  /** A list came back: the store holds exactly these from now on. */
  replaced(objects: ReadonlyMap<string, T>): void {
    void this.#afterLoad(() => {
      for (const [key, obj] of objects) this.#put(key, obj);
      for (const key of [...this.#persisted.keys()]) if (!objects.has(key)) this.#delete(key);
      this.#track(this.#store.put(this.#kind, listedKey, true));
    });
  }

  changed(key: string, obj: T): void {
    void this.#afterLoad(() => this.#put(key, obj));
  }

  deleted(key: string): void {
    void this.#afterLoad(() => this.#delete(key));
  }

  /** Resolves once every write made so far is done. */
  async flush(): Promise<void> {
    await this.#loaded;
    await Promise.all([...this.#writes]);
  }

  async #afterLoad(work: () => void): Promise<void> {
    await this.load();
    work();
  }

  #put(key: string, obj: T): void {
    const rv = resourceVersionOf(obj);
    if (this.#persisted.has(key) && rv !== undefined && this.#persisted.get(key) === rv) return;
    this.#persisted.set(key, rv);
    this.#track(this.#store.put(this.#kind, key, obj));
  }

  #delete(key: string): void {
    this.#persisted.delete(key);
    this.#track(this.#store.delete(this.#kind, key));
  }

  #track(write: Promise<void>): void {
    const tracked = write
      .catch((err: unknown) =>
        this.#logger.warn({ kind: this.#kind, err: asError(err).message }, 'offline store: write failed'),
      )
      .finally(() => this.#writes.delete(tracked));
    this.#writes.add(tracked);
  }
}
