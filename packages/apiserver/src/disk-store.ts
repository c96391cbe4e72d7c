// The default offline store: one JSON file per object under a root directory, one folder per
// kind. Each write goes to a temp file in the same folder, is fsynced, renamed over the old file
// and the folder fsynced, so a crash leaves the old or the new object, never half of one. Every
// file and folder is private to the agent (0600 / 0700): Secrets and tokens are among them.

import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  type Logger,
  noopLogger,
  type OfflineStore,
  type OfflineStoreEntry,
  type OfflineStoreKind,
} from '@kubelet-kit/core';

/**
 * Options of {@link DiskOfflineStore}.
 *
 * @public
 */
export interface DiskOfflineStoreOptions {
  /** The root directory (created 0700 if missing), e.g. `<root-dir>/offline-store`. */
  readonly directory: string;
  /** Where unreadable files are reported (they are skipped, never fatal). */
  readonly logger?: Logger;
}

const kindDirs: Readonly<Record<OfflineStoreKind, string>> = {
  Pod: 'pods',
  PodStatus: 'pod-statuses',
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  ServiceAccountToken: 'tokens',
  Node: 'nodes',
  Service: 'services',
  Event: 'events',
};

/** Longest file name kept readable; longer keys are hashed (names may not exceed 255 bytes). */
const maxReadableName = 180;
const suffix = '.json';

/** The file name of a key: the key URI-encoded (no `/`), or its SHA-256 when that is too long. */
export function fileNameOf(key: string): string {
  const encoded = encodeURIComponent(key).replace(/^\./, '%2E');
  if (encoded.length <= maxReadableName) return encoded + suffix;
  return `h-${createHash('sha256').update(key).digest('hex')}${suffix}`;
}

interface StoredFile {
  readonly key: string;
  readonly value: unknown;
}

/**
 * An {@link @kubelet-kit/core#OfflineStore} on disk with atomic writes (temp file, fsync, rename, fsync of the
 * folder). Files hold `{"key": …, "value": …}`, so a hashed name still lists its key. Writes of
 * one key are serialized in call order. A file that cannot be read or parsed is logged (naming the
 * file and the cause) and skipped, never thrown.
 *
 * @public
 */
export class DiskOfflineStore implements OfflineStore {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #ready = new Map<OfflineStoreKind, Promise<string>>();
  /** The last write of each file, so writes of one key land in order. */
  readonly #tails = new Map<string, Promise<void>>();
  #seq = 0;

  constructor(options: DiskOfflineStoreOptions) {
    if (!options.directory) throw new Error('offline store: directory is empty');
    this.#dir = path.resolve(options.directory);
    this.#logger = (options.logger ?? noopLogger).child({ component: 'offline-store' });
  }

  /** The root directory. */
  get directory(): string {
    return this.#dir;
  }

  #kindDir(kind: OfflineStoreKind): Promise<string> {
    let ready = this.#ready.get(kind);
    if (!ready) {
      const sub = kindDirs[kind];
      if (!sub) return Promise.reject(new Error(`offline store: unknown kind ${JSON.stringify(kind)}`));
      const dir = path.join(this.#dir, sub);
      ready = (async () => {
        await fs.mkdir(dir, { recursive: true, mode: 0o700 });
        // An existing folder keeps its mode through mkdir: make it private whatever it was.
        await fs.chmod(this.#dir, 0o700);
        await fs.chmod(dir, 0o700);
        return dir;
      })();
      ready.catch(() => this.#ready.delete(kind));
      this.#ready.set(kind, ready);
    }
    return ready;
  }

  async get<T>(kind: OfflineStoreKind, key: string): Promise<T | undefined> {
    const file = path.join(await this.#kindDir(kind), fileNameOf(key));
    await this.#tails.get(file);
    const stored = await this.#read(file);
    return stored && stored.key === key ? (stored.value as T) : undefined;
  }

  async list<T>(kind: OfflineStoreKind): Promise<Array<OfflineStoreEntry<T>>> {
    const dir = await this.#kindDir(kind);
    const names = (await fs.readdir(dir)).filter((n) => n.endsWith(suffix) && !n.startsWith('.'));
    const out: Array<OfflineStoreEntry<T>> = [];
    for (const name of names) {
      const file = path.join(dir, name);
      await this.#tails.get(file);
      const stored = await this.#read(file);
      if (stored) out.push({ key: stored.key, value: stored.value as T });
    }
    return out;
  }

  put(kind: OfflineStoreKind, key: string, value: unknown): Promise<void> {
    const data = `${JSON.stringify({ key, value } satisfies StoredFile)}\n`;
    return this.#serialize(kind, key, (file) => this.#writeAtomic(file, data));
  }

  delete(kind: OfflineStoreKind, key: string): Promise<void> {
    return this.#serialize(kind, key, async (file) => {
      try {
        await fs.unlink(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    });
  }

  async #serialize(
    kind: OfflineStoreKind,
    key: string,
    work: (file: string) => Promise<void>,
  ): Promise<void> {
    const file = path.join(await this.#kindDir(kind), fileNameOf(key));
    const previous = this.#tails.get(file) ?? Promise.resolve();
    const run = previous.then(() => work(file));
    const tail = run.catch(() => {});
    this.#tails.set(file, tail);
    void tail.then(() => {
      if (this.#tails.get(file) === tail) this.#tails.delete(file);
    });
    return run;
  }

  async #writeAtomic(file: string, data: string): Promise<void> {
    const dir = path.dirname(file);
    const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${this.#seq++}.tmp`);
    const handle = await fs.open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fs.rename(tmp, file);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    // The rename is durable only once the folder is.
    const dirHandle = await fs.open(dir, 'r');
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  }

  async #read(file: string): Promise<StoredFile | undefined> {
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      // One unreadable entry (a folder in its place, no permission) costs that entry only.
      this.#logger.warn({ file, err: (err as Error).message }, 'offline store: skipping an unreadable file');
      return undefined;
    }
    try {
      const parsed = JSON.parse(text) as Partial<StoredFile> | null;
      if (typeof parsed?.key !== 'string' || !('value' in parsed)) throw new Error('no "key" and "value"');
      return { key: parsed.key, value: parsed.value };
    } catch (err) {
      this.#logger.warn({ file, err: (err as Error).message }, 'offline store: skipping an unreadable file');
      return undefined;
    }
  }
}
