import { type CommandRunner, CommandTimeoutError, type EnvVar } from '@kubelet-kit/core';
import { ProbeError } from '../errors.js';
import type { ProbeActionResult } from '../types.js';

/** Upstream reads at most 10 KiB of a probe command's output. */
export const maxExecOutputLength = 10 * 1024;

/** Options of {@link execProbe}. */
export interface ExecProbeOptions {
  readonly runner: CommandRunner;
  /** The runtime's container ID, without the `type://` prefix. */
  readonly containerId: string;
  readonly command: readonly string[];
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/**
 * Runs a probe command in the container (upstream `pkg/probe/exec`): exit 0 is a success, any
 * other exit a failure with the output, a timeout a failure; any other error of the runner is
 * an error (the caller retries it).
 */
export async function execProbe(options: ExecProbeOptions): Promise<ProbeActionResult> {
  let out: { stdout: Uint8Array; stderr: Uint8Array; exitCode: number };
  try {
    out = await options.runner.runInContainer({
      containerId: options.containerId,
      cmd: options.command,
      timeoutMs: options.timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    if (err instanceof CommandTimeoutError) {
      // Upstream's CRI returns an empty output on a timeout; the message is all there is to say.
      return { result: 'Failure', output: err.message };
    }
    throw new ProbeError('ProbeError', err instanceof Error ? err.message : String(err), { cause: err });
  }
  const output = combinedOutput(out.stdout, out.stderr);
  return { result: out.exitCode === 0 ? 'Success' : 'Failure', output };
}

function combinedOutput(stdout: Uint8Array, stderr: Uint8Array): string {
  const all = Buffer.concat([stdout, stderr]);
  return all.subarray(0, maxExecOutputLength).toString('utf8');
}

/**
 * Expands `$(VAR)` in a probe command from the container's own `env` values only, not from
 * `envFrom`, `valueFrom` or the downward API (upstream `ExpandContainerCommandOnlyStatic`).
 * `$$` is an escaped `$`; an unknown or unterminated reference is kept as written.
 */
export function expandContainerCommandOnlyStatic(
  command: readonly string[],
  env: readonly EnvVar[] | undefined,
): string[] {
  const values = new Map<string, string>();
  for (const e of env ?? []) values.set(e.name, e.value ?? '');
  return command.map((arg) => expand(arg, values));
}

function expand(input: string, values: ReadonlyMap<string, string>): string {
  let out = '';
  let i = 0;
  while (i < input.length) {
    const ch = input[i]!;
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      i++;
      continue;
    }
    const next = input[i + 1]!;
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = values.get(name);
      out += value ?? `$(${name})`;
      i = close + 1;
    } else {
      out += ch + next;
      i += 2;
    }
  }
  return out;
}
