import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { type Clock, type Logger, noopLogger, type Timer } from '@kubelet-kit/core';
import { ContainerState, type RuntimeServiceClient } from '@kubelet-kit/cri';

// Container log rotation (upstream `pkg/kubelet/logs/container_log_manager.go`).

/** Upstream's defaults: 10Mi, 5 files, 1 worker, every 10 s. @public */
export const defaultContainerLogMaxSizeBytes = 10 * 1024 * 1024;
/** @public */
export const defaultContainerLogMaxFiles = 5;
/** @public */
export const defaultContainerLogMaxWorkers = 1;
/** @public */
export const defaultContainerLogMonitorIntervalMs = 10_000;

const compressSuffix = '.gz';
const tmpSuffix = '.tmp';

/** The CRI calls the log manager makes. @public */
export type LogRotationRuntimeService = Pick<
  RuntimeServiceClient,
  'listContainers' | 'containerStatus' | 'reopenContainerLog'
>;

/** Options of {@link ContainerLogManager}. @public */
export interface ContainerLogManagerOptions {
  readonly runtimeService: LogRotationRuntimeService;
  /** A log reaching this size is rotated (upstream `--container-log-max-size`). */
  readonly maxSizeBytes?: number;
  /** Files kept per container, the current one included; at least 2 (`--container-log-max-files`). */
  readonly maxFiles?: number;
  /** Containers rotated at once (`--container-log-max-workers`). */
  readonly maxWorkers?: number;
  /** How often the logs are looked at (`--container-log-monitor-interval`). */
  readonly monitorIntervalMs?: number;
  readonly clock: Clock;
  readonly logger?: Logger;
}

/** Upstream's rotated-file suffix, `20060102-150405` in local time. */
function rotationTimestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/**
 * Rotates running containers' logs as upstream's ContainerLogManager: every monitor interval,
 * each running container whose current log has reached the maximum size gets its leftovers
 * cleaned up, its oldest rotated files removed (keeping maxFiles-2, room for the current file
 * and the one about to be rotated), the remaining rotated files gzip-compressed, the current
 * file renamed to `<log>.<timestamp>` and the runtime asked to reopen the log
 * (`ReopenContainerLog`).
 * @public
 */
export class ContainerLogManager {
  readonly #rs: LogRotationRuntimeService;
  readonly #maxSize: number;
  readonly #maxFiles: number;
  readonly #maxWorkers: number;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;
  /**
   * Log paths by container ID. A container's log path is set when it is created and never
   * changes, so its ContainerStatus is asked once, not every round as upstream does: with 110
   * idle pods those calls were most of the agent's CRI calls (11 a second against the relist's 2).
   */
  readonly #logPaths = new Map<string, string>();

  constructor(options: ContainerLogManagerOptions) {
    const maxFiles = options.maxFiles ?? defaultContainerLogMaxFiles;
    const maxWorkers = options.maxWorkers ?? defaultContainerLogMaxWorkers;
    const maxSize = options.maxSizeBytes ?? defaultContainerLogMaxSizeBytes;
    const interval = options.monitorIntervalMs ?? defaultContainerLogMonitorIntervalMs;
    if (!Number.isInteger(maxFiles) || maxFiles <= 1)
      throw new Error(`invalid MaxFiles ${maxFiles}, must be > 1`);
    if (!Number.isInteger(maxWorkers) || maxWorkers < 1)
      throw new Error(`invalid containerLogMaxWorkers ${maxWorkers}, must be greater than or equal to 1`);
    if (!(maxSize > 0)) throw new Error(`invalid containerLogMaxSize ${maxSize}, must be greater than 0`);
    if (!(interval > 0))
      throw new Error(`invalid containerLogMonitorInterval ${interval}ms, must be positive`);
    this.#rs = options.runtimeService;
    this.#maxSize = maxSize;
    this.#maxFiles = maxFiles;
    this.#maxWorkers = maxWorkers;
    this.#intervalMs = interval;
    this.#clock = options.clock;
    this.#logger = options.logger ?? noopLogger;
  }

  /** Starts the monitor loop (upstream `Start`). */
  start(): void {
    if (this.#timer) return;
    this.#timer = this.#clock.setInterval(() => {
      // A round still running when the next is due is not overlapped.
      if (this.#running) return;
      this.#running = this.rotateLogs().finally(() => {
        this.#running = undefined;
      });
    }, this.#intervalMs);
  }

  async stop(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#running;
  }

  /** One round over the running containers (upstream `rotateLogs`); errors are logged. */
  async rotateLogs(): Promise<void> {
    let ids: string[];
    try {
      const res = await this.#rs.listContainers({});
      ids = (res.containers ?? [])
        .filter((c) => c.state === ContainerState.CONTAINER_RUNNING)
        .map((c) => c.id);
    } catch (err) {
      this.#logger.error({ err: String(err) }, 'failed to list containers for log rotation');
      return;
    }
    // Upstream's worker queue: maxWorkers containers at once, one container never twice.
    // Taken by index: `shift` moves the whole rest of a large array, a pass over every container
    // for each container at 100,000 of them.
    const queue = [...new Set(ids)];
    const live = new Set(queue);
    for (const id of this.#logPaths.keys()) if (!live.has(id)) this.#logPaths.delete(id);
    let next = 0;
    const worker = async () => {
      while (next < queue.length) await this.#processContainer(queue[next++] as string);
    };
    await Promise.all(Array.from({ length: Math.min(this.#maxWorkers, queue.length) }, worker));
  }

  async #processContainer(id: string): Promise<void> {
    // One container's error never blocks the others'.
    try {
      let logPath = this.#logPaths.get(id);
      if (!logPath) {
        logPath = (await this.#rs.containerStatus({ containerId: id })).status?.logPath;
        if (!logPath) return;
        this.#logPaths.set(id, logPath);
      }
      let size: number;
      try {
        size = (await fsp.stat(logPath)).size;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        // The log is gone (removed by hand, or a rotation half done): the runtime makes a new one.
        await this.#rs.reopenContainerLog({ containerId: id });
        size = (await fsp.stat(logPath)).size;
      }
      if (size < this.#maxSize) return;
      await this.rotateLog(id, logPath);
    } catch (err) {
      this.#logger.error({ containerId: id, err: String(err) }, 'failed to rotate log for container');
    }
  }

  /** Upstream `rotateLog`: clean up, trim, compress, then rotate the current file. @internal */
  async rotateLog(id: string, log: string): Promise<void> {
    const dir = path.dirname(log);
    const prefix = `${path.basename(log)}.`;
    let logs = (await fsp.readdir(dir)).filter((n) => n.startsWith(prefix)).map((n) => path.join(dir, n));
    logs = await cleanupUnusedLogs(logs);
    logs = await this.#removeExcessLogs(logs);
    for (const l of logs) {
      if (!l.endsWith(compressSuffix)) await compressLog(l);
    }
    await this.#rotateLatestLog(id, log);
  }

  async #removeExcessLogs(logs: string[]): Promise<string[]> {
    // Oldest first (the timestamp sorts), so an ongoing `kubectl logs` of a newer file survives.
    const sorted = [...logs].sort();
    // The current file and the one about to be rotated take two of maxFiles.
    const maxRotated = Math.max(0, this.#maxFiles - 2);
    const excess = Math.max(0, sorted.length - maxRotated);
    for (const l of sorted.slice(0, excess)) await fsp.rm(l, { force: true });
    return sorted.slice(excess);
  }

  async #rotateLatestLog(id: string, log: string): Promise<void> {
    const rotated = `${log}.${rotationTimestamp(this.#clock.now())}`;
    await fsp.rename(log, rotated);
    try {
      await this.#rs.reopenContainerLog({ containerId: id });
    } catch (err) {
      // Renamed back so the next round tries again; the log is not lost.
      await fsp.rename(rotated, log).catch((renameErr: unknown) => {
        this.#logger.error(
          { rotated, log, containerId: id, err: String(renameErr) },
          'failed to rename rotated log back',
        );
      });
      throw new Error(`failed to reopen container log "${id}": ${String(err)}`);
    }
  }
}

/**
 * Upstream `isInUse`: temporary files are leftovers of an interrupted compression, and an
 * uncompressed file whose `.gz` exists was compressed but not yet removed.
 */
function isInUse(l: string, logs: readonly string[]): boolean {
  if (l.endsWith(tmpSuffix)) return false;
  if (l.endsWith(compressSuffix)) return true;
  return !logs.includes(l + compressSuffix);
}

async function cleanupUnusedLogs(logs: string[]): Promise<string[]> {
  const inuse: string[] = [];
  for (const l of logs) {
    if (isInUse(l, logs)) inuse.push(l);
    else await fsp.rm(l, { force: true });
  }
  return inuse;
}

/** gzip into `<log>.tmp`, renamed to `<log>.gz` once whole, then the original removed. */
async function compressLog(log: string): Promise<void> {
  const tmp = log + tmpSuffix;
  try {
    await pipeline(fs.createReadStream(log), zlib.createGzip(), fs.createWriteStream(tmp, { mode: 0o644 }));
    await fsp.rename(tmp, log + compressSuffix);
  } catch (err) {
    throw new Error(`failed to compress log "${log}": ${String(err)}`);
  } finally {
    await fsp.rm(tmp, { force: true });
  }
  await fsp.rm(log, { force: true });
}
