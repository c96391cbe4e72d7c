import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Clock, Logger } from '@kubelet-kit/core';
import { ContainerState, CriError, type RuntimeServiceClient } from '@kubelet-kit/cri';

// Container log files and termination messages (upstream `kuberuntime_container.go`,
// `kuberuntime_logs.go`).

/** Upstream `MaxContainerTerminationMessageLength`: a message file is read up to its last 4 KiB. */
export const maxContainerTerminationMessageLength = 4096;
/** Under FallbackToLogsOnError: at most the last 80 lines and 2 KiB of the log. */
export const maxContainerTerminationMessageLogLines = 80;
export const maxContainerTerminationMessageLogLength = 2048;

// Upstream's pattern matches a prefix: `<n>.log` and its rotated forms (`<n>.log.<timestamp>[.gz]`).
const logFilePattern = /^(\d+)\.log/;

/**
 * The restart count implied by a container's log directory: one more than the highest
 * `<n>.log`, so counting survives the runtime forgetting its containers.
 */
export async function calcRestartCountByLogDir(dir: string): Promise<number> {
  let entries: fsSync.Dirent[];
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let count = 0;
  for (const entry of entries) {
    if (entry.isDirectory()) continue;
    const m = logFilePattern.exec(entry.name);
    if (m) count = Math.max(count, Number(m[1]) + 1);
  }
  return count;
}

/** The last `max` bytes of a file; empty when it cannot be read. */
export async function readTail(file: string, max: number): Promise<string> {
  return (await readTailWithSize(file, max)).text;
}

async function readTailWithSize(file: string, max: number): Promise<{ text: string; whole: boolean }> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(file, 'r');
    const { size } = await handle.stat();
    const length = Math.min(size, max);
    const buf = Buffer.alloc(length);
    await handle.read(buf, 0, length, size - length);
    return { text: buf.toString('utf8'), whole: length === size };
  } catch {
    return { text: '', whole: true };
  } finally {
    await handle?.close();
  }
}

/**
 * The content of the last lines of a CRI-format log (`<time> <stream> <P|F> <content>`), as
 * upstream's `readLastStringFromContainerLogs`: partial lines joined, at most 80 lines and 2 KiB.
 */
export async function readLastStringFromContainerLogs(file: string): Promise<string> {
  // Read generously: CRI framing adds ~40 bytes per line.
  const { text: raw, whole } = await readTailWithSize(
    file,
    maxContainerTerminationMessageLogLength * 4 + 80 * 64,
  );
  if (!raw) return '';
  const lines = raw.split('\n');
  // A tail that starts mid-file may start mid-line.
  if (!whole && lines.length > 1) lines.shift();
  let out = '';
  for (const line of lines) {
    if (!line) continue;
    const m = /^\S+ (?:stdout|stderr) ([PF]) ?(.*)$/.exec(line);
    if (!m) continue;
    out += m[2]! + (m[1] === 'F' ? '\n' : '');
  }
  const kept = out.split('\n');
  const trailing = kept[kept.length - 1] === '' ? kept.pop() : undefined;
  let text = kept.slice(-maxContainerTerminationMessageLogLines).join('\n');
  if (trailing !== undefined) text += '\n';
  const bytes = Buffer.from(text);
  return bytes.length > maxContainerTerminationMessageLogLength
    ? bytes.subarray(bytes.length - maxContainerTerminationMessageLogLength).toString()
    : text;
}

// ---- Reading container logs (upstream `kuberuntime/logs`: ReadLogs) ----

/**
 * The v1 PodLogOptions the kubelet's `/containerLogs` accepts (the container and `previous`
 * choose the file; the rest shape the stream). `sinceTime` is epoch milliseconds.
 * @public
 */
export interface PodLogOptions {
  readonly follow?: boolean;
  readonly previous?: boolean;
  readonly timestamps?: boolean;
  readonly tailLines?: number;
  readonly limitBytes?: number;
  readonly sinceSeconds?: number;
  readonly sinceTime?: number;
}

/** Upstream's internal `LogOptions`: -1 means no tail or byte limit. @public */
export interface LogOptions {
  readonly tail: number;
  readonly bytes: number;
  /** Lines before this time (epoch ms) are skipped; 0 keeps all. */
  readonly since: number;
  readonly follow: boolean;
  readonly timestamp: boolean;
}

/** Upstream `NewLogOptions`: the later of sinceSeconds (from now) and sinceTime wins. @public */
export function newLogOptions(api: PodLogOptions, nowMs: number): LogOptions {
  let since = 0;
  if (api.sinceSeconds !== undefined) since = nowMs - api.sinceSeconds * 1000;
  if (api.sinceTime !== undefined && api.sinceTime > since) since = api.sinceTime;
  return {
    tail: api.tailLines ?? -1,
    bytes: api.limitBytes ?? -1,
    since,
    follow: api.follow ?? false,
    timestamp: api.timestamps ?? false,
  };
}

/** Where one stream of a log goes; a returned promise is awaited (backpressure). @public */
export interface LogStreamWriter {
  write(data: Buffer): void | Promise<void>;
}

/** What ReadLogs needs of the runtime: whether the container still runs. @public */
export type LogsRuntimeService = Pick<RuntimeServiceClient, 'containerStatus'>;

/** Options of {@link readLogs}. @public */
export interface ReadLogsOptions {
  readonly clock: Clock;
  readonly logger?: Logger;
  /** Aborted when the client goes away: a follow ends. */
  readonly signal?: AbortSignal;
  /** How long a follow waits for a file event before looking anyway (upstream 1 s). */
  readonly forceCheckPeriodMs?: number;
}

/** Upstream `logForceCheckPeriod`. */
const logForceCheckPeriodMs = 1000;
const readChunkBytes = 64 * 1024;
const NL = 0x0a;
const SP = 0x20;

interface LogMessage {
  /** The timestamp as written (RFC3339Nano). */
  timestamp: Buffer;
  stream: 'stdout' | 'stderr';
  log: Buffer;
}

/**
 * Upstream `FindTailLineStartIndex`: the offset of the n-th line from the end (raw lines, so
 * partial CRI lines count each); 0 when n < 0 or the file has fewer lines.
 * @internal
 */
export async function findTailLineStartIndex(f: fs.FileHandle, n: number): Promise<number> {
  if (n < 0) return 0;
  const { size } = await f.stat();
  const blockSize = 1024;
  let left = 0;
  let count = 0;
  let buf = Buffer.alloc(0);
  for (let right = size; right > 0 && count <= n; right -= blockSize) {
    left = Math.max(0, right - blockSize);
    buf = Buffer.alloc(right - left);
    await f.read(buf, 0, buf.length, left);
    for (let i = buf.indexOf(NL); i >= 0; i = buf.indexOf(NL, i + 1)) count++;
  }
  for (; count > n; count--) {
    const idx = buf.indexOf(NL) + 1;
    buf = buf.subarray(idx);
    left += idx;
  }
  return left;
}

/** Upstream `parseCRILog`: `<time> <stream> <tag>[:<more tags>] <content>`. */
function parseCRILog(line: Buffer, msg: LogMessage): string | undefined {
  const t = line.indexOf(SP);
  if (t < 0) return 'timestamp is not found';
  msg.timestamp = line.subarray(0, t);
  const s = line.indexOf(SP, t + 1);
  if (s < 0) return 'stream type is not found';
  const stream = line.toString('latin1', t + 1, s);
  if (stream !== 'stdout' && stream !== 'stderr') return `unexpected stream type "${stream}"`;
  msg.stream = stream;
  const g = line.indexOf(SP, s + 1);
  if (g < 0) return 'log tag is not found';
  // Tags are `P` or `F`, with room for more after a colon (forward compatible).
  const partial = line[s + 1] === 0x50 && (g === s + 2 || line[s + 2] === 0x3a);
  let end = line.length;
  if (partial && end > 0 && line[end - 1] === NL) end--;
  msg.log = line.subarray(g + 1, end);
  return undefined;
}

/** Upstream `parseDockerJSONLog`: `{"log":…,"stream":…,"time":…}`. */
function parseDockerJSONLog(line: Buffer, msg: LogMessage): string | undefined {
  let v: { log?: unknown; stream?: unknown; time?: unknown };
  try {
    v = JSON.parse(line.toString('utf8')) as typeof v;
  } catch (err) {
    return `failed with ${String(err)} to unmarshal log`;
  }
  if (typeof v.time !== 'string' || (v.stream !== 'stdout' && v.stream !== 'stderr'))
    return 'not a docker log';
  msg.timestamp = Buffer.from(v.time);
  msg.stream = v.stream;
  msg.log = Buffer.from(typeof v.log === 'string' ? v.log : '');
  return undefined;
}

/** Upstream `getParseFunc`: the first parser that takes the first line decides the format. */
function getParseFunc(line: Buffer): ((line: Buffer, msg: LogMessage) => string | undefined) | undefined {
  const probe: LogMessage = { timestamp: Buffer.alloc(0), stream: 'stdout', log: Buffer.alloc(0) };
  for (const parse of [parseCRILog, parseDockerJSONLog]) {
    if (parse(line, probe) === undefined && !Number.isNaN(parseTimestampMs(probe.timestamp))) return parse;
  }
  return undefined;
}

/** Epoch ms of an RFC3339(Nano) timestamp; NaN when it is not one. */
function parseTimestampMs(ts: Buffer): number {
  const s = ts.toString('latin1');
  if (s.length < 20 || s[4] !== '-' || s[10] !== 'T') return Number.NaN;
  return Date.parse(s);
}

/** Go's RFC3339Nano formatting of a parsed time: trailing zeros of the fraction dropped. */
function formatTimestamp(ts: Buffer): Buffer {
  const s = ts.toString('latin1');
  const dot = s.indexOf('.', 19);
  if (dot < 0) return ts;
  let end = dot + 1;
  while (end < s.length && s.charCodeAt(end) >= 0x30 && s.charCodeAt(end) <= 0x39) end++;
  let cut = end;
  while (cut > dot + 1 && s[cut - 1] === '0') cut--;
  if (cut === dot + 1) cut = dot;
  return cut === end ? ts : Buffer.from(s.slice(0, cut) + s.slice(end), 'latin1');
}

/** Upstream's `logWriter`: since, timestamps and the byte limit; output batched per read. */
class LogWriter {
  #remain: number;
  readonly #opts: LogOptions;
  readonly #out: Record<'stdout' | 'stderr', LogStreamWriter>;
  #pending: Buffer[] = [];
  #pendingStream: 'stdout' | 'stderr' = 'stdout';

  constructor(stdout: LogStreamWriter, stderr: LogStreamWriter, opts: LogOptions) {
    this.#opts = opts;
    this.#out = { stdout, stderr };
    this.#remain = opts.bytes < 0 ? Number.POSITIVE_INFINITY : opts.bytes;
  }

  /** Queues one message; true when the byte limit is reached. */
  async write(msg: LogMessage, addPrefix: boolean): Promise<boolean> {
    if (this.#opts.since > 0 && parseTimestampMs(msg.timestamp) < this.#opts.since) return false;
    if (msg.stream !== this.#pendingStream && this.#out[msg.stream] !== this.#out[this.#pendingStream]) {
      await this.flush();
    }
    this.#pendingStream = msg.stream;
    if (this.#opts.timestamp && addPrefix) {
      this.#push(formatTimestamp(msg.timestamp));
      this.#push(space);
    }
    this.#push(msg.log);
    return this.#remain <= 0;
  }

  #push(b: Buffer): void {
    if (this.#remain <= 0) return;
    const part = b.length > this.#remain ? b.subarray(0, this.#remain) : b;
    this.#remain -= part.length;
    this.#pending.push(part);
  }

  async flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    const data = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
    this.#pending = [];
    await this.#out[this.#pendingStream].write(data);
  }
}

const space = Buffer.from(' ');

/** Upstream `isContainerRunning`: a container gone or not running ends a follow. */
async function isContainerRunning(id: string, rs: LogsRuntimeService): Promise<boolean> {
  try {
    const res = await rs.containerStatus({ containerId: id });
    return res.status?.state === ContainerState.CONTAINER_RUNNING;
  } catch (err) {
    if (err instanceof CriError && err.code === 'NotFound') return false;
    throw err;
  }
}

/**
 * Watches the log's directory (upstream: fsnotify on the directory, so a rotated-away file and
 * its successor are both seen): `changed` once the file is written, `recreated` once a new file
 * takes its name.
 */
class LogWatcher {
  readonly #watcher: fsSync.FSWatcher;
  #dirty = false;
  #wake: (() => void) | undefined;

  constructor(dir: string, base: string) {
    this.#watcher = fsSync.watch(dir, { persistent: false }, (_event, name) => {
      if (name !== null && name !== base) return;
      this.#dirty = true;
      this.#wake?.();
    });
    this.#watcher.on('error', () => {
      this.#dirty = true;
      this.#wake?.();
    });
  }

  /** Resolves on a file event, after `periodMs`, or when aborted. */
  async wait(clock: Clock, periodMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.#dirty || signal?.aborted) {
      this.#dirty = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        timer.cancel();
        signal?.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = clock.setTimeout(done, periodMs);
      this.#wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
    this.#dirty = false;
  }

  close(): void {
    this.#watcher.close();
  }
}

async function inodeOf(file: string): Promise<number | undefined> {
  try {
    return (await fs.stat(file)).ino;
  } catch {
    return undefined;
  }
}

/**
 * Streams a container's CRI-format log as upstream's `ReadLogs`: from the tail line, since a
 * time, up to a byte limit, with timestamps; partial (`P`) lines joined to what follows. With
 * `follow` it keeps reading as the file grows and moves to the new file when the log is rotated
 * (after reading the old one to its end), until the container has stopped and everything is
 * read, or the signal aborts. Only the current file is read, as upstream does: rotated files are
 * not replayed.
 * @public
 */
export async function readLogs(
  logPath: string,
  containerId: string,
  opts: LogOptions,
  runtimeService: LogsRuntimeService,
  stdout: LogStreamWriter,
  stderr: LogStreamWriter,
  options: ReadLogsOptions,
): Promise<void> {
  const { clock, signal } = options;
  // As upstream: symlinks resolved first, so the directory watched is the real one.
  const file = await fs.realpath(logPath).catch((err: unknown) => {
    throw new Error(`failed to try resolving symlinks in path "${logPath}": ${String(err)}`);
  });
  let f = await fs.open(file, 'r').catch((err: unknown) => {
    throw new Error(`failed to open log file "${file}": ${String(err)}`);
  });
  let watcher: LogWatcher | undefined;
  try {
    let pos = await findTailLineStartIndex(f, opts.tail);
    let ino = (await f.stat()).ino;
    const limitedMode = opts.tail >= 0 && !opts.follow;
    let limitedNum = opts.tail;
    const writer = new LogWriter(stdout, stderr, opts);
    let parse: ((line: Buffer, msg: LogMessage) => string | undefined) | undefined;
    const msg: LogMessage = { timestamp: Buffer.alloc(0), stream: 'stdout', log: Buffer.alloc(0) };
    let isNewLine = true;
    let found = true;
    let drained = false;
    let carry: Buffer = Buffer.alloc(0);
    const chunk = Buffer.allocUnsafe(readChunkBytes);

    // One line through the parser and the writer; true when reading should stop.
    const handle = async (line: Buffer): Promise<boolean> => {
      if (!parse) {
        parse = getParseFunc(line);
        if (!parse)
          throw new Error(`failed to get parse function: unsupported log format: "${line.toString()}"`);
      }
      const error = parse(line, msg);
      if (error !== undefined) {
        options.logger?.error({ path: file, error }, 'failed when parsing line in log file');
        return false;
      }
      if (await writer.write(msg, isNewLine)) return true;
      if (limitedMode) limitedNum--;
      isNewLine = msg.log.length === 0 || msg.log[msg.log.length - 1] === NL;
      return limitedMode && limitedNum === 0;
    };

    for (;;) {
      if (signal?.aborted || (limitedMode && limitedNum === 0)) return;
      const { bytesRead } = await f.read(chunk, 0, readChunkBytes, pos);
      if (bytesRead > 0) {
        pos += bytesRead;
        let data = chunk.subarray(0, bytesRead);
        if (carry.length > 0) data = Buffer.concat([carry, data]);
        let start = 0;
        for (let nl = data.indexOf(NL); nl >= 0; nl = data.indexOf(NL, start)) {
          const stop = await handle(data.subarray(start, nl + 1));
          start = nl + 1;
          if (stop) {
            await writer.flush();
            return;
          }
        }
        // The incomplete rest waits for more (copied: the chunk buffer is reused).
        carry = Buffer.from(data.subarray(start));
        await writer.flush();
        continue;
      }
      // End of file.
      if (!opts.follow) {
        // An incomplete last line is still written, then reading stops.
        if (carry.length > 0) {
          options.logger?.info({ path: file }, 'incomplete line in log file');
          await handle(carry);
        }
        await writer.flush();
        return;
      }
      // The container stopped and the file is read to its end.
      if (!found) return;
      if (!watcher) {
        watcher = new LogWatcher(path.dirname(file), path.basename(file));
        // A write may have come before the watch: read again first.
        continue;
      }
      // A new file under the name: this one is read to its end, go on with the new one.
      const current = await inodeOf(file);
      if (current !== undefined && current !== ino) {
        // What was written to the old file before the rename is read first.
        if (!drained) {
          drained = true;
          continue;
        }
        drained = false;
        const next = await fs.open(file, 'r').catch(() => undefined);
        if (next) {
          await f.close();
          f = next;
          ino = (await f.stat()).ino;
          pos = 0;
          carry = Buffer.alloc(0);
          continue;
        }
      }
      if (!(await isContainerRunning(containerId, runtimeService))) {
        // Upstream: read on until the next end of file, then stop.
        found = false;
        continue;
      }
      await watcher.wait(clock, options.forceCheckPeriodMs ?? logForceCheckPeriodMs, signal);
    }
  } finally {
    watcher?.close();
    await f.close();
  }
}

/**
 * Upstream `kubeGenericRuntimeManager.GetContainerLogs`: the container's log path from the
 * runtime, then {@link readLogs}.
 * @public
 */
export async function getContainerLogs(
  runtimeService: LogsRuntimeService,
  containerId: string,
  apiOptions: PodLogOptions,
  stdout: LogStreamWriter,
  stderr: LogStreamWriter,
  options: ReadLogsOptions,
): Promise<void> {
  let logPath: string | undefined;
  try {
    logPath = (await runtimeService.containerStatus({ containerId })).status?.logPath;
  } catch (err) {
    throw new Error(`failed to get container status "${containerId}": ${String(err)}`);
  }
  if (!logPath) throw new Error(`failed to get container status "${containerId}": no log path`);
  await readLogs(
    logPath,
    containerId,
    newLogOptions(apiOptions, options.clock.now()),
    runtimeService,
    stdout,
    stderr,
    options,
  );
}
