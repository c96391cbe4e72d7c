// The file source: static pods from a directory (or one file) of manifests (upstream
// `pkg/kubelet/config/file.go`, `file_linux.go`).
import { watch as fsWatch, readFileSync, type Stats, statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  type Clock,
  deepCopy,
  type EventRecorder,
  getPodFullName,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  RealClock,
  type Timer,
} from '@kubelet-kit/core';
import { decodeStaticPods, maxConfigLength } from './common.js';
import { deepEqual } from './equal.js';
import { PodSourceError, PodValidationError, recordValidationFailure } from './errors.js';
import type { PodSource, PodSourceSink } from './source.js';

/**
 * Something that reports changes under a path (node's `fs.watch`, or a fake).
 *
 * @public
 */
export interface FileWatcher {
  close(): void;
}

/**
 * Starts watching `path` (a directory); calls `onChange` with the changed entry's name when
 * known, and `onError` when the watch breaks.
 *
 * @public
 */
export type WatchFunction = (
  path: string,
  onChange: (filename: string | undefined) => void,
  onError: (err: unknown) => void,
) => FileWatcher;

/**
 * Quiet time after a file-system event before the directory is listed again, ms. Short: upstream
 * reads a file on each of its events; this only lets an editor's write-and-rename (or a burst of
 * files moved in) share one listing.
 *
 * @public
 */
export const DefaultFileDebounceMs = 10;

/**
 * The default watcher: `fs.watch`, not recursive.
 *
 * @public
 */
export const nodeWatch: WatchFunction = (path, onChange, onError) => {
  const watcher = fsWatch(path, { persistent: false }, (_event, filename) => onChange(filename ?? undefined));
  watcher.on('error', onError);
  return watcher;
};

/**
 * The default filter of directory entries: dotfiles (as upstream's `[^.]*` glob) and the swap,
 * backup and temporary files editors leave beside the file they save.
 *
 * @public
 */
export function isIgnoredManifestName(name: string): boolean {
  return (
    name.startsWith('.') ||
    name.endsWith('~') ||
    /\.(swp|swo|swx|tmp|part|bak)$/.test(name) ||
    name === '4913'
  );
}

/**
 * Options of {@link FileSource}.
 *
 * @public
 */
export interface FileSourceOptions {
  /** A directory of manifests, or one manifest file. */
  readonly path: string;
  readonly nodeName: string;
  /** Source name; default `file`. */
  readonly name?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Receives a `FailedValidation` warning per rejected file. */
  readonly recorder?: EventRecorder;
  /** Re-list period in ms (upstream `fileCheckFrequency`); default 20 000. */
  readonly period?: number;
  /** Quiet time after the last file-system event before re-listing, in ms; default 10. */
  readonly debounce?: number;
  /** File-system watcher; default {@link nodeWatch}; `false` to rely on the period only. */
  readonly watch?: WatchFunction | false;
  /** Entries to skip; default {@link isIgnoredManifestName}. */
  readonly ignore?: (name: string) => boolean;
  /** See `DecodeStaticPodOptions.preventStaticPodAPIReferences`; default true. */
  readonly preventStaticPodAPIReferences?: boolean;
  /** Called once for each newly rejected file (again only after its content changes). */
  readonly onError?: (error: PodValidationError | PodSourceError) => void;
}

interface CachedFile {
  /** Identity, size and times of the file when it was read: unchanged means not read again. */
  readonly stamp?: string;
  readonly content: string;
  readonly pods?: Pod[];
  readonly error?: PodValidationError;
}

/** The ADDs a listing sends ahead of its SET. */
interface EarlyAdds {
  /** The pods of the last SET (what `sent` starts from). */
  readonly lastSent: readonly Pod[];
  /**
   * Full names and UIDs of the pods sent so far (`uid:` prefixed); made at the listing's first
   * new file, so that a re-list that finds none does not index every pod.
   */
  sent?: Set<string>;
  /** New pods not sent yet. */
  pending: Pod[];
  /** How many pending pods make the next ADD. */
  batch: number;
  /** How many more pods go one per ADD before the batches grow. */
  singlesLeft: number;
}

/**
 * Pods of a listing sent one per ADD before the ADDs grow: enough for a runtime's first few
 * creation calls to start at once. In a burst of 110 files moved into the agent's directory, the
 * 4th pod's first call came 20-30 ms sooner than with ADDs of 1, 2, 4, ….
 */
const earlyAddSingles = 8;

function podKeys(pod: Pod): string[] {
  return [getPodFullName(pod), `uid:${pod.metadata?.uid ?? ''}`];
}

/**
 * Static pods from a directory or a single file: one Pod per file, YAML or JSON; dotfiles and
 * editor swap files ignored; no recursion. It lists at start, after file-system events
 * (debounced through the clock, so an editor's write-and-rename gives one listing) and every
 * `period`. Each listing whose result differs from the last one sent is sent as a SET; a missing
 * path or an empty directory sends an empty SET. After the first SET, the pods of files that
 * are new to a listing also go out ahead of that SET as they are read: the first 8 one per ADD,
 * then in ADDs of 2, 4, 8, … pods. A bad file is reported (logger, event, `onError`,
 * {@link FileSource.errors}) and skipped; the other files are still sent.
 *
 * @public
 */
export class FileSource implements PodSource {
  readonly name: string;
  readonly #options: FileSourceOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #ignore: (name: string) => boolean;
  readonly #watchFn: WatchFunction | false;
  #sink: PodSourceSink | undefined;
  #cache = new Map<string, CachedFile>();
  #errors: PodValidationError[] = [];
  #lastSent: Pod[] | undefined;
  #periodTimer: Timer | undefined;
  #debounceTimer: Timer | undefined;
  #watcher: FileWatcher | undefined;
  #watchKey = '';
  /** The watched file's name when the path is a single file (or missing). */
  #singleFile: string | undefined;
  #running: Promise<void> | undefined;
  #dirty = false;
  #stopped = false;

  constructor(options: FileSourceOptions) {
    this.#options = options;
    this.name = options.name ?? 'file';
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ source: this.name, path: options.path });
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#ignore = options.ignore ?? isIgnoredManifestName;
    this.#watchFn = options.watch ?? nodeWatch;
  }

  /** The files rejected by the latest listing. */
  get errors(): readonly PodValidationError[] {
    return this.#errors;
  }

  /** True while a file-system event waits out the debounce before a re-list. */
  get relistPending(): boolean {
    return this.#debounceTimer !== undefined;
  }

  /** Lists once, then keeps listing on events and every period. Resolves after the first listing. */
  async start(sink: PodSourceSink): Promise<void> {
    if (this.#sink) throw new Error('FileSource already started');
    this.#sink = sink;
    this.#periodTimer = this.#clock.setInterval(() => this.#request(), this.#options.period ?? 20_000);
    this.#request();
    await this.whenIdle();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#periodTimer?.cancel();
    this.#debounceTimer?.cancel();
    this.#debounceTimer = undefined;
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#running;
  }

  /** Lists now (after any listing in progress) and resolves when done. */
  async resync(): Promise<void> {
    this.#request();
    await this.whenIdle();
  }

  /** Resolves when no listing runs or waits to run. */
  async whenIdle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #request(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#dirty = true;
      return;
    }
    this.#running = this.#loop().finally(() => {
      this.#running = undefined;
    });
  }

  async #loop(): Promise<void> {
    do {
      this.#dirty = false;
      try {
        await this.#extractFromPath();
      } catch (err) {
        this.#logger.error({ err }, 'Unable to read config path');
      }
    } while (this.#dirty && !this.#stopped);
  }

  #onWatchEvent(filename: string | undefined): void {
    if (this.#stopped) return;
    const single = this.#singleFile;
    if (filename !== undefined) {
      if (single !== undefined && filename !== single) return;
      if (single === undefined && this.#ignore(filename)) return;
    }
    this.#debounceTimer?.cancel();
    this.#debounceTimer = this.#clock.setTimeout(() => {
      this.#debounceTimer = undefined;
      this.#request();
    }, this.#options.debounce ?? DefaultFileDebounceMs);
  }

  #ensureWatch(dir: string, single: string | undefined): void {
    if (this.#watchFn === false || this.#stopped) return;
    const key = `${dir}\0${single ?? ''}`;
    if (this.#watcher && this.#watchKey === key) return;
    // The path changed kind (appeared, or became a directory): watch what it is now.
    this.#watcher?.close();
    this.#watcher = undefined;
    try {
      this.#watchKey = key;
      this.#singleFile = single;
      this.#watcher = this.#watchFn(
        dir,
        (filename) => this.#onWatchEvent(filename),
        (err) => {
          // A broken watch is re-established on the next listing; the period covers the gap.
          this.#logger.warn({ err }, 'File watch failed');
          this.#watcher?.close();
          this.#watcher = undefined;
        },
      );
    } catch (err) {
      this.#logger.debug({ err }, 'Unable to watch config path, relying on the period');
    }
  }

  async #extractFromPath(): Promise<void> {
    const path = this.#options.path;
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.#reportSourceError(
          new PodSourceError(this.name, path, 'ReadError', String((err as Error).message), { cause: err }),
        );
        return;
      }
      // A missing path is an empty source, so that the source is marked seen.
      this.#ensureWatch(dirname(path), basename(path));
      this.#cache.clear();
      this.#errors = [];
      await this.#send([]);
      return;
    }
    if (info.isDirectory()) {
      this.#ensureWatch(path, undefined);
      const pods = await this.#extractFromDir(path);
      await this.#send(pods);
    } else if (info.isFile()) {
      this.#ensureWatch(dirname(path), basename(path));
      const errors: PodValidationError[] = [];
      const seen = new Set<string>();
      const pods = await this.#extractFromFile(path, errors, seen);
      this.#finishListing(errors, seen);
      // A bad or unreadable single file keeps the last state, as upstream (which returns before
      // replacing its store); only a source that never sent anything sends its empty SET.
      if ((pods === undefined || errors.length > 0) && this.#lastSent !== undefined) return;
      await this.#send(pods ?? []);
    } else {
      this.#reportSourceError(
        new PodSourceError(this.name, path, 'InvalidPath', 'path is not a directory or file'),
      );
    }
  }

  async #extractFromDir(dir: string): Promise<Pod[]> {
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => !this.#ignore(n)).sort();
    } catch (err) {
      throw new PodSourceError(this.name, dir, 'ReadError', String((err as Error).message), { cause: err });
    }
    const pods: Pod[] = [];
    const errors: PodValidationError[] = [];
    const seen = new Set<string>();
    // Pods of files that appeared since the last SET go out as ADDs while the listing goes on,
    // so the first of a burst of new manifests starts before the last is read (upstream sends
    // each file's pod on its own event). The first few pods go one per ADD, then each ADD holds
    // twice as many as the one before, so that a directory of thousands of new files costs the
    // consumer a few dozen admissions of a batch, not one per file; what is left when the
    // listing ends goes with the SET. Only names and UIDs no sent pod has: a renamed file, a
    // duplicate name or UID is left to the SET at the end, which decides as before.
    const early: EarlyAdds | undefined =
      this.#lastSent !== undefined
        ? {
            lastSent: this.#lastSent,
            pending: [],
            batch: 1,
            singlesLeft: earlyAddSingles,
          }
        : undefined;
    for (const name of names) {
      const file = join(dir, name);
      let info: Stats;
      try {
        // Synchronous, as upstream's reads: a manifest is small, and a read through the thread
        // pool costs several times the read itself (110 files: about 20 ms less per listing).
        info = statSync(file);
      } catch (err) {
        this.#logger.debug({ file, err }, "Can't get metadata for file");
        continue;
      }
      if (info.isDirectory()) {
        this.#logger.error({ file }, 'Not recursing into manifest path');
        continue;
      }
      if (!info.isFile()) {
        this.#logger.debug({ file }, 'Manifest path is not a directory or file');
        continue;
      }
      const isNew = !this.#cache.has(file);
      const filePods = (await this.#extractFromFile(file, errors, seen, info)) ?? [];
      pods.push(...filePods);
      if (early && isNew && filePods.length > 0) await this.#addEarly(filePods, early);
    }
    this.#finishListing(errors, seen);
    return pods;
  }

  /**
   * Queues the pods of a new file whose name and UID no sent pod has, and sends the queue as an
   * ADD once it holds the current batch size (which doubles once the singles are sent).
   */
  async #addEarly(pods: Pod[], early: EarlyAdds): Promise<void> {
    early.sent ??= new Set(early.lastSent.flatMap((p) => podKeys(p)));
    const sent = early.sent;
    for (const p of pods) {
      const keys = podKeys(p);
      if (!keys.some((k) => sent.has(k))) early.pending.push(p);
      for (const k of keys) sent.add(k);
    }
    if (early.pending.length < early.batch || this.#stopped || !this.#sink) return;
    const batch = early.pending;
    early.pending = [];
    if (early.singlesLeft > 0) early.singlesLeft -= batch.length;
    if (early.singlesLeft <= 0) early.batch *= 2;
    await this.#sink({ op: 'ADD', pods: deepCopy(batch), source: this.name });
    // Let the consumer act on it (start the pods' syncs) before the next file is read.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async #extractFromFile(
    file: string,
    errors: PodValidationError[],
    seen: Set<string>,
    known?: Stats,
  ): Promise<Pod[] | undefined> {
    seen.add(file);
    let content: string;
    let stamp: string;
    try {
      const info = known ?? statSync(file);
      // Any write changes the change time (nanoseconds on the usual file systems), a replacing
      // rename the inode: an unchanged stamp is the same content, which a period re-list then
      // neither reads nor decodes again.
      stamp = `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
      const previous = this.#cache.get(file);
      if (previous?.stamp === stamp) {
        if (previous.error) errors.push(previous.error);
        return deepCopy(previous.pods ?? []);
      }
      const bytes = info.size;
      // A file of the limit itself is refused, as upstream's ReadAtMost errs once it reads it.
      if (bytes >= maxConfigLength) {
        const error = new PodValidationError({ source: this.name, file }, undefined, [
          {
            field: '<document>',
            type: 'Invalid value',
            detail: `manifest is ${bytes} bytes, not under the ${maxConfigLength}-byte limit`,
          },
        ]);
        this.#reject(file, `<${bytes} bytes>`, error, errors, stamp);
        return [];
      }
      content = readFileSync(file, 'utf8');
    } catch (err) {
      this.#logger.debug({ file, err }, "Can't read config file");
      this.#cache.delete(file);
      // Unreadable, not empty: a single-file path keeps its last state on it.
      return undefined;
    }
    const cached = this.#cache.get(file);
    if (cached && cached.content === content) {
      if (cached.error) errors.push(cached.error);
      this.#cache.set(file, { ...cached, stamp });
      return deepCopy(cached.pods ?? []);
    }
    try {
      const pods = decodeStaticPods(content, {
        nodeName: this.#options.nodeName,
        source: this.name,
        file,
        ...(this.#options.preventStaticPodAPIReferences !== undefined
          ? { preventStaticPodAPIReferences: this.#options.preventStaticPodAPIReferences }
          : {}),
      });
      this.#cache.set(file, { stamp, content, pods });
      return deepCopy(pods);
    } catch (err) {
      const error =
        err instanceof PodValidationError
          ? err
          : new PodValidationError({ source: this.name, file }, undefined, [
              { field: '<document>', type: 'Invalid value', detail: String((err as Error)?.message ?? err) },
            ]);
      this.#reject(file, content, error, errors, stamp);
      return [];
    }
  }

  /** Records a rejected file; reports it only when it is new or its content changed. */
  #reject(
    file: string,
    content: string,
    error: PodValidationError,
    errors: PodValidationError[],
    stamp: string,
  ): void {
    errors.push(error);
    const cached = this.#cache.get(file);
    if (cached?.error && cached.content === content) {
      this.#cache.set(file, { ...cached, stamp });
      return;
    }
    this.#cache.set(file, { stamp, content, error });
    this.#logger.warn({ file, field: error.field, err: error.message }, "Can't process config file");
    recordValidationFailure(this.#recorder, error);
    this.#notify(error);
  }

  #finishListing(errors: PodValidationError[], seen: Set<string>): void {
    for (const file of this.#cache.keys()) if (!seen.has(file)) this.#cache.delete(file);
    this.#errors = errors;
  }

  #reportSourceError(error: PodSourceError): void {
    this.#logger.error({ err: error.message }, 'Unable to read config path');
    this.#notify(error);
  }

  #notify(error: PodValidationError | PodSourceError): void {
    try {
      this.#options.onError?.(error);
    } catch (err) {
      this.#logger.error({ err }, 'FileSource onError callback threw');
    }
  }

  async #send(pods: Pod[]): Promise<void> {
    if (this.#stopped || !this.#sink) return;
    if (this.#lastSent !== undefined && deepEqual(this.#lastSent, pods)) return;
    this.#lastSent = pods;
    await this.#sink({ op: 'SET', pods: deepCopy(pods), source: this.name });
  }
}
