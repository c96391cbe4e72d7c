import { promises as fs } from 'node:fs';
import path from 'node:path';
import {
  type Clock,
  type ConfigMap,
  type Logger,
  noopLogger,
  type ObjectGetter,
  RealClock,
  type Secret,
} from '@kubelet-kit/core';
import { yaml } from './load-yaml.js';

/**
 * Options of {@link LocalObjectGetter}.
 *
 * @public
 */
export interface LocalObjectGetterOptions {
  /** A directory of ConfigMap and Secret manifests (`*.yaml`, `*.yml`, `*.json`; several per file, or a `List`). */
  readonly directory: string;
  /** The directory is looked at again at most this often (ms); default 1000, 0 on every get. */
  readonly cacheTtlMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

interface FileEntry {
  readonly mtimeMs: number;
  readonly size: number;
  readonly objects: readonly KubeObject[];
}

interface KubeObject {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly items?: readonly KubeObject[];
}

const manifestExt = /\.(ya?ml|json)$/i;

/**
 * Reads ConfigMaps and Secrets from manifests in a directory, for agents without an API server.
 * A manifest without a namespace is in `default`. Only changed files are parsed again; a file
 * that does not parse is logged and skipped.
 *
 * @public
 */
export class LocalObjectGetter implements ObjectGetter {
  readonly #dir: string;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #files = new Map<string, FileEntry>();
  #index = new Map<string, KubeObject>();
  #scannedAt: number | undefined;
  #scanning: Promise<void> | undefined;

  constructor(options: LocalObjectGetterOptions) {
    this.#dir = options.directory;
    this.#ttlMs = options.cacheTtlMs ?? 1000;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'local-object-getter' });
  }

  async getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined> {
    await this.#refresh(signal);
    return this.#index.get(`ConfigMap/${namespace}/${name}`) as ConfigMap | undefined;
  }

  async getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined> {
    await this.#refresh(signal);
    return this.#index.get(`Secret/${namespace}/${name}`) as Secret | undefined;
  }

  #refresh(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.#scannedAt !== undefined && this.#clock.since(this.#scannedAt) < this.#ttlMs)
      return Promise.resolve();
    // Concurrent gets share one scan.
    this.#scanning ??= this.#scan().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  async #scan(): Promise<void> {
    const started = this.#clock.now();
    let names: string[];
    try {
      names = (await fs.readdir(this.#dir)).filter((n) => manifestExt.test(n)).sort();
    } catch (err) {
      this.#logger.warn({ dir: this.#dir, err: String(err) }, 'cannot read object directory');
      names = [];
    }
    const files = new Map<string, FileEntry>();
    let changed = names.length !== this.#files.size;
    for (const name of names) {
      const full = path.join(this.#dir, name);
      try {
        const st = await fs.stat(full);
        if (!st.isFile()) continue;
        const old = this.#files.get(name);
        if (old && old.mtimeMs === st.mtimeMs && old.size === st.size) {
          files.set(name, old);
          continue;
        }
        changed = true;
        files.set(name, {
          mtimeMs: st.mtimeMs,
          size: st.size,
          objects: parseManifests(await fs.readFile(full, 'utf8')),
        });
      } catch (err) {
        this.#logger.warn({ file: full, err: String(err) }, 'skipping unreadable manifest');
      }
    }
    if (changed) {
      const index = new Map<string, KubeObject>();
      for (const entry of files.values()) {
        for (const obj of entry.objects) {
          if (obj.kind !== 'ConfigMap' && obj.kind !== 'Secret') continue;
          const name = obj.metadata?.name;
          if (!name) continue;
          index.set(`${obj.kind}/${obj.metadata?.namespace || 'default'}/${name}`, obj);
        }
      }
      this.#index = index;
    }
    this.#files = files;
    this.#scannedAt = started;
  }
}

function parseManifests(text: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const doc of yaml().parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw doc.errors[0];
    const value = doc.toJS() as KubeObject | null;
    if (!value || typeof value !== 'object') continue;
    if (Array.isArray(value.items) && value.kind?.endsWith('List')) out.push(...value.items);
    else out.push(value);
  }
  return out;
}
