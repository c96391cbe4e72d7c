import fsSync from 'node:fs';
import fs from 'node:fs/promises';

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
    // Synchronous: one small directory, read once per container start.
    entries = fsSync.readdirSync(dir, { withFileTypes: true });
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
