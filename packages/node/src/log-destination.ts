import fs from 'node:fs';

/** A pino destination: `write` takes one serialized line; `flushSync` writes out what waits. */
export interface LineBatchingDestination {
  write(line: string): boolean;
  flushSync(): void;
}

/**
 * Writes log lines to a file descriptor in batches: the lines logged during one turn of the event
 * loop go out in one synchronous write at its end (`setImmediate`). A burst of pods logs several
 * lines per turn, and on a busy machine each write to a pipe costs a wake-up of its reader; a
 * line still reaches the output within the turn it was logged in. Lines of the last turn before a
 * crash are written on `exit`.
 */
export function lineBatchingDestination(fd: number): LineBatchingDestination {
  let pending: string[] = [];
  let scheduled = false;
  const flushSync = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const data = pending.length === 1 ? (pending[0] as string) : pending.join('');
    pending = [];
    try {
      writeAll(fd, data);
    } catch {
      // The reader went away (EPIPE): logs have nowhere to go, and the agent goes on.
    }
  };
  process.on('exit', flushSync);
  return {
    write(line: string): boolean {
      pending.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flushSync);
      }
      return true;
    },
    flushSync,
  };
}

const pause = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd: number, data: string): void {
  let buf = Buffer.from(data);
  while (buf.length > 0) {
    try {
      const n = fs.writeSync(fd, buf);
      buf = buf.subarray(n);
    } catch (err) {
      // A non-blocking pipe that is full: wait a little for the reader, then go on (as pino's
      // own destination does).
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}
