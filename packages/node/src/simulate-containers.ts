// How a simulated node's in-memory containers "run": each started container either runs until
// the kubelet stops it, or exits by itself after a while with an exit code, as its command or its
// pod's annotation says. This is the only thing a simulated node fakes; the kubelet code above
// the CRI (pod workers, kuberuntime, PLEG, probes, status manager) is the real one.
import type { Clock, Logger, Timer } from '@kubelet-kit/core';
import type { InMemoryCriServer, StartedContainer } from '@kubelet-kit/cri/testing';
import { parseGoDuration } from './go-duration.js';

/**
 * The pod annotation prefix that says how a container exits: `simulate.kubelet-kit.io/exit.<container>`
 * with `code=<n>` and/or `after=<duration>` (e.g. `code=1,after=30s`).
 *
 * @public
 */
export const SimulatedExitAnnotationPrefix = 'simulate.kubelet-kit.io/exit.';

/**
 * What a simulated container does once started: exit with `exitCode` after `afterMs`, or run until
 * stopped (`undefined`).
 *
 * @public
 */
export interface SimulatedExit {
  readonly afterMs: number;
  readonly exitCode: number;
}

const shells = new Set(['sh', 'bash', 'ash', 'dash', '/bin/sh', '/bin/bash', '/bin/ash', '/usr/bin/bash']);

/** `sleep` arguments in seconds as busybox's takes them (`5`, `0.5`, `2m`), or infinity. */
function sleepMs(arg: string | undefined): number | undefined {
  if (arg === undefined) return undefined;
  if (arg === 'infinity' || arg === 'inf') return Number.POSITIVE_INFINITY;
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(arg);
  if (!m) return undefined;
  const unit = { '': 1000, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
    m[2] as '' | 's' | 'm' | 'h' | 'd'
  ];
  return Number(m[1]) * unit;
}

/**
 * Reads a command the way a shell would run it, for the few commands whose effect is time and
 * an exit code: `sleep N`, `exit N`, `true`, `false`, `:`, `echo …`, in sequence (`;`, `&&`,
 * newlines). Anything else (loops, traps, servers): undefined, the container runs until stopped.
 */
function scriptExit(script: string): SimulatedExit | undefined {
  let afterMs = 0;
  let status = 0;
  for (const raw of script.split(/;|&&|\n/)) {
    const words = raw.trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) continue;
    const [exe = '', ...rest] = words;
    // `/bin/sleep` is `sleep`.
    const cmd = exe.slice(exe.lastIndexOf('/') + 1);
    if (cmd === 'sleep') {
      const ms = sleepMs(rest[0]);
      if (ms === undefined || rest.length > 1) return undefined;
      if (ms === Number.POSITIVE_INFINITY) return undefined;
      afterMs += ms;
      status = 0;
    } else if (cmd === 'exit') {
      const code = rest.length === 0 ? status : Number(rest[0]);
      if (!Number.isInteger(code) || rest.length > 1) return undefined;
      return { afterMs, exitCode: ((code % 256) + 256) % 256 };
    } else if (cmd === 'true' || cmd === ':') status = 0;
    else if (cmd === 'false') status = 1;
    else if (cmd === 'echo') status = 0;
    else return undefined;
  }
  return { afterMs, exitCode: status };
}

/** `code=<n>,after=<duration>` of the exit annotation; a clear error names what is wrong. */
export function parseSimulatedExit(value: string): SimulatedExit {
  let afterMs = 0;
  let exitCode = 0;
  for (const part of value.split(',').map((p) => p.trim())) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = part.slice(0, eq);
    const v = part.slice(eq + 1);
    if (key === 'code' && /^\d+$/.test(v) && Number(v) < 256) exitCode = Number(v);
    else if (key === 'after' && (parseGoDuration(v) ?? -1) >= 0) afterMs = parseGoDuration(v) ?? 0;
    else throw new Error(`${JSON.stringify(part)} is not code=<0-255> or after=<duration>`);
  }
  return { afterMs, exitCode };
}

/**
 * How a started container exits: the pod's `simulate.kubelet-kit.io/exit.<container>` annotation
 * when present, else its command and args read as a short shell script; undefined: it runs until
 * the kubelet stops it (also for no command: the image's entrypoint, e.g. a server).
 *
 * @internal
 */
export function simulatedExit(container: {
  readonly name: string;
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly podAnnotations: Readonly<Record<string, string>>;
}): SimulatedExit | undefined {
  const annotation = container.podAnnotations[`${SimulatedExitAnnotationPrefix}${container.name}`];
  if (annotation !== undefined) return parseSimulatedExit(annotation);
  const argv = [...container.command, ...container.args];
  const [exe, ...rest] = argv;
  if (exe === undefined) return undefined;
  const base = exe.slice(exe.lastIndexOf('/') + 1);
  if (shells.has(exe) || shells.has(base)) {
    const c = rest.indexOf('-c');
    const script = c >= 0 ? rest[c + 1] : undefined;
    return script === undefined ? undefined : scriptExit(script);
  }
  return scriptExit(argv.join(' '));
}

/**
 * Makes the containers `cri` starts exit as {@link simulatedExit} says, on `clock`. Returns what
 * stops it (pending exits are dropped).
 *
 * @internal
 */
export function runSimulatedContainers(cri: InMemoryCriServer, clock: Clock, logger: Logger): () => void {
  const pending = new Map<string, Timer>();
  const off = cri.onContainerStarted((c: StartedContainer) => {
    let exit: SimulatedExit | undefined;
    try {
      exit = simulatedExit({
        name: c.name,
        command: c.command,
        args: c.args,
        podAnnotations: c.sandbox.annotations,
      });
    } catch (err) {
      // A bad annotation: said once per start, and the container runs until stopped.
      logger.warn(
        {
          pod: `${c.sandbox.namespace}/${c.sandbox.name}`,
          container: c.name,
          annotation: `${SimulatedExitAnnotationPrefix}${c.name}`,
          err: (err as Error).message,
        },
        'ignoring a bad simulated-exit annotation',
      );
      return;
    }
    if (!exit) return;
    const { exitCode } = exit;
    pending.set(
      c.id,
      clock.setTimeout(() => {
        pending.delete(c.id);
        try {
          cri.exitContainer(c.id, exitCode);
        } catch {
          // Stopped or removed by the kubelet first: nothing left to exit.
        }
      }, exit.afterMs),
    );
  });
  return () => {
    off();
    for (const t of pending.values()) t.cancel();
    pending.clear();
  };
}
