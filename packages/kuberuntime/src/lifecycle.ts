import http from 'node:http';
import https from 'node:https';
import type {
  Clock,
  CommandRunner,
  Container,
  ContainerID,
  IntOrString,
  LifecycleHandler,
  Pod,
} from '@kubelet-kit/core';
import { errorMessage } from './errors.js';

// Lifecycle hook handlers (upstream `pkg/kubelet/lifecycle/handlers.go`): exec through the
// runtime, httpGet against the pod IP, sleep.

/** Thrown when a hook fails; `message` is what upstream reports. */
export class LifecycleHookError extends Error {
  readonly code = 'LifecycleHookError';
  constructor(message: string) {
    super(message);
    this.name = 'LifecycleHookError';
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

function describe(handler: LifecycleHandler): string {
  if (handler.exec) return JSON.stringify(handler.exec.command ?? []);
  if (handler.httpGet) return `${handler.httpGet.path ?? '/'}`;
  return '';
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
      let res: Awaited<ReturnType<CommandRunner['runInContainer']>>;
      try {
        res = await this.#runner.runInContainer({
          containerId: target.containerId.id,
          cmd: handler.exec.command ?? [],
          timeoutMs: 0,
          ...(target.signal ? { signal: target.signal } : {}),
        });
      } catch (err) {
        throw new LifecycleHookError(
          `Exec lifecycle hook (${describe(handler)}) for Container "${target.container.name}" in Pod "${pod}" failed - error: ${errorMessage(err)}, message: ""`,
        );
      }
      if (res.exitCode !== 0) {
        const output = Buffer.concat([Buffer.from(res.stdout), Buffer.from(res.stderr)]).toString();
        throw new LifecycleHookError(
          `Exec lifecycle hook (${describe(handler)}) for Container "${target.container.name}" in Pod "${pod}" failed - error: command '${(handler.exec.command ?? []).join(' ')}' exited with ${res.exitCode}: ${output}, message: ${JSON.stringify(output)}`,
        );
      }
      return;
    }
    if (handler.httpGet) {
      try {
        await this.#httpGet(target, handler);
      } catch (err) {
        throw new LifecycleHookError(
          `HTTP lifecycle hook (${describe(handler)}) for Container "${target.container.name}" in Pod "${pod}" failed - error: ${errorMessage(err)}`,
        );
      }
      return;
    }
    if (handler.sleep) {
      await this.#clock
        .sleep(Math.max(0, handler.sleep.seconds) * 1000, target.signal)
        .catch(() => undefined);
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
    const headers: Record<string, string> = { 'User-Agent': 'kube-lifecycle/1.34' };
    for (const h of get.httpHeaders ?? []) headers[h.name] = h.value;
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
