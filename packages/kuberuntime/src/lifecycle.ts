import http from 'node:http';
import https from 'node:https';
import {
  type Clock,
  CodedError,
  type CommandRunner,
  type Container,
  type ContainerID,
  type IntOrString,
  type LifecycleHandler,
  type Pod,
} from '@kubelet-kit/core';
import { errorMessage } from './errors.js';

// Lifecycle hook handlers (upstream `pkg/kubelet/lifecycle/handlers.go`): exec through the
// runtime, httpGet against the pod IP, sleep.

/** Thrown when a hook fails; `message` is what upstream reports. */
export class LifecycleHookError extends CodedError<'LifecycleHookError'> {
  constructor(message: string) {
    super('LifecycleHookError', 'LifecycleHookError', message);
  }
}

/** Options of {@link HandlerRunner}. */
export interface HandlerRunnerOptions {
  readonly commandRunner: CommandRunner;
  readonly clock: Clock;
  /** Limits an httpGet hook that nothing else bounds. Default 2 minutes. */
  readonly httpTimeoutMs?: number;
}

/** What a hook runs against. */
export interface HookTarget {
  readonly containerId: ContainerID;
  readonly pod: Pod;
  readonly container: Container;
  readonly podIP: string;
  readonly signal?: AbortSignal;
}

function resolvePort(port: IntOrString | undefined, container: Container): number {
  if (typeof port === 'number') return port;
  if (port === undefined || port === '') return 80;
  if (/^\d+$/.test(port)) return Number(port);
  const named = (container.ports ?? []).find((p) => p.name === port);
  if (!named) throw new LifecycleHookError(`couldn't find port: ${port} in ${container.name}`);
  return named.containerPort;
}

/** A command as Go's `%v` prints a string slice: `[a b c]`. */
function commandList(command: readonly string[]): string {
  return `[${command.join(' ')}]`;
}

/** Runs lifecycle handlers. */
export class HandlerRunner {
  readonly #runner: CommandRunner;
  readonly #clock: Clock;
  readonly #httpTimeoutMs: number;

  constructor(options: HandlerRunnerOptions) {
    this.#runner = options.commandRunner;
    this.#clock = options.clock;
    this.#httpTimeoutMs = options.httpTimeoutMs ?? 120_000;
  }

  /** Runs the handler; rejects with {@link LifecycleHookError} carrying upstream's message. */
  async run(target: HookTarget, handler: LifecycleHandler): Promise<void> {
    const pod = `${target.pod.metadata?.name}_${target.pod.metadata?.namespace}(${target.pod.metadata?.uid})`;
    if (handler.exec) {
      const command = handler.exec.command ?? [];
      let res: Awaited<ReturnType<CommandRunner['runInContainer']>>;
      try {
        res = await this.#runner.runInContainer({
          containerId: target.containerId.id,
          cmd: command,
          timeoutMs: 0,
          ...(target.signal ? { signal: target.signal } : {}),
        });
      } catch (err) {
        throw new LifecycleHookError(
          `Exec lifecycle hook (${commandList(command)}) for Container "${target.container.name}" in Pod "${pod}" failed - error: ${errorMessage(err)}, message: ""`,
        );
      }
      if (res.exitCode !== 0) {
        // As upstream's ExecSync error: stderr alone in the error, stdout and stderr in the message.
        const stderr = Buffer.from(res.stderr).toString();
        const output = Buffer.from(res.stdout).toString() + stderr;
        throw new LifecycleHookError(
          `Exec lifecycle hook (${commandList(command)}) for Container "${target.container.name}" in Pod "${pod}" failed - error: command '${command.join(' ')}' exited with ${res.exitCode}: ${stderr}, message: ${JSON.stringify(output)}`,
        );
      }
      return;
    }
    if (handler.httpGet) {
      try {
        await this.#httpGet(target, handler);
      } catch (err) {
        throw new LifecycleHookError(
          `HTTP lifecycle hook (${handler.httpGet.path ?? ''}) for Container "${target.container.name}" in Pod "${pod}" failed - error: ${errorMessage(err)}`,
        );
      }
      return;
    }
    if (handler.sleep) {
      try {
        await this.#clock.sleep(Math.max(0, handler.sleep.seconds) * 1000, target.signal);
      } catch {
        // Cut short (upstream: its context ended): the hook failed.
        throw new LifecycleHookError(
          `Sleep lifecycle hook (${handler.sleep.seconds}) for Container "${target.container.name}" in Pod "${pod}" failed - error: container terminated before sleep hook finished`,
        );
      }
      return;
    }
    throw new LifecycleHookError(`Cannot run handler: invalid handler: ${JSON.stringify(handler)}`);
  }

  #httpGet(target: HookTarget, handler: LifecycleHandler): Promise<void> {
    const get = handler.httpGet!;
    const host = get.host || target.podIP;
    if (!host) return Promise.reject(new Error('no pod IP for the HTTP hook'));
    const port = resolvePort(get.port, target.container);
    const scheme = (get.scheme ?? 'HTTP').toLowerCase();
    let p = get.path ?? '';
    if (!p.startsWith('/')) p = `/${p}`;
    const url = new URL(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${p}`);
    // Header names are case-insensitive; the hook's own User-Agent and Accept replace the defaults
    // and an empty Accept removes it (upstream newProbeRequest).
    const headers: Record<string, string> = { 'user-agent': 'kube-lifecycle/1.34', accept: '*/*' };
    for (const h of get.httpHeaders ?? []) headers[h.name.toLowerCase()] = h.value;
    if (headers.accept === '') delete headers.accept;
    const mod = scheme === 'https' ? https : http;
    return new Promise<void>((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => req.destroy(new Error('timeout')), this.#httpTimeoutMs);
      const req = mod.get(
        url,
        { headers, rejectUnauthorized: false, ...(target.signal ? { signal: target.signal } : {}) },
        (res) => {
          // Any answer counts: upstream does not check the status code of a hook's response.
          res.resume();
          res.on('end', () => {
            timer.cancel();
            resolve();
          });
          res.on('error', (err) => {
            timer.cancel();
            reject(err);
          });
        },
      );
      req.on('error', (err) => {
        timer.cancel();
        reject(err);
      });
    });
  }
}
