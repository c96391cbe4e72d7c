import type { Clock } from '@kubelet-kit/core';
import { ProbeError } from '../errors.js';
import type { ProbeActionResult } from '../types.js';
import {
  buildProbeHttpTarget,
  ProbeHttpError,
  type ProbeHttpExchange,
  type ProbeHttpResponse,
  type ProbeHttpTarget,
  probeHttpGet,
} from './http-client.js';
import type { HttpProbeRequest } from './http-request.js';

/** Upstream reads at most 10 KiB of a probe's response body; the rest is not read at all. */
export const maxRespBodyLength = 10 * 1024;

/** Go's http.Client follows at most this many requests in one chain. */
const maxRequests = 10;

const redirectCodes: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** Options of {@link httpProbe}. */
export interface HttpProbeOptions {
  readonly request: HttpProbeRequest;
  /** Covers the whole exchange, redirects and body included. */
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Follow redirects to another host too; the kubelet never does (default false). */
  readonly followNonLocalRedirects?: boolean;
  readonly signal?: AbortSignal;
}

/** One probe's exchange: the request in flight and why it was cut short, if it was. */
class Exchange {
  current: ProbeHttpExchange | undefined;
  /** 'deadline' when the timeout fired, 'canceled' when the caller's signal aborted. */
  why: 'deadline' | 'canceled' | undefined;

  cut(why: 'deadline' | 'canceled'): void {
    this.why ??= why;
    this.current?.cut(new Error(why));
  }
}

/**
 * Cuts the probes of an abort signal when it aborts, with one listener per signal rather than
 * one added and removed per probe (a worker's signal serves all of its probes).
 */
export class AbortWatch {
  readonly #watched = new WeakMap<AbortSignal, Set<Exchange>>();

  add(signal: AbortSignal, exchange: Exchange): void {
    let set = this.#watched.get(signal);
    if (!set) {
      const exchanges = new Set<Exchange>();
      set = exchanges;
      this.#watched.set(signal, exchanges);
      signal.addEventListener(
        'abort',
        () => {
          for (const e of exchanges) e.cut('canceled');
          exchanges.clear();
        },
        { once: true },
      );
    }
    set.add(exchange);
  }

  delete(signal: AbortSignal, exchange: Exchange): void {
    this.#watched.get(signal)?.delete(exchange);
  }
}

/** What a prober running many probes shares between them. */
export interface HttpProbeContext {
  /** Scratch space for plain-HTTP reads (used synchronously, so probes can share it). */
  readonly readBuffer: Buffer;
  readonly aborts: AbortWatch;
}

/**
 * One HTTP GET probe (upstream `pkg/probe/http.DoHTTPProbe` with the kubelet's client): no
 * keep-alive, no certificate checks, redirects followed only on the same host. 200–299 is a
 * success with the body as output; 300–399 (a redirect not followed) a warning; anything else
 * a failure `HTTP probe failed with statuscode: N`. Transport errors and timeouts are failures,
 * not errors; an error while reading the body is an error.
 */
export function httpProbe(options: HttpProbeOptions): Promise<ProbeActionResult> {
  return runHttpProbe(options, undefined, undefined);
}

/**
 * {@link httpProbe} with the first request's bytes prepared by the caller (see
 * {@link prepareHttpTarget}; they only change with the request) and a shared context, so that a
 * prober running many probes builds neither per probe.
 */
export async function runHttpProbe(
  options: HttpProbeOptions,
  target: ProbeHttpTarget | Error | undefined,
  context: HttpProbeContext | undefined,
): Promise<ProbeActionResult> {
  const exchange = new Exchange();
  const timer = options.clock.setTimeout(() => exchange.cut('deadline'), options.timeoutMs);
  const signal = options.signal;
  let onAbort: (() => void) | undefined;
  if (signal?.aborted) exchange.cut('canceled');
  else if (signal && context) context.aborts.add(signal, exchange);
  else if (signal) {
    onAbort = () => exchange.cut('canceled');
    signal.addEventListener('abort', onAbort, { once: true });
  }
  try {
    return await doHTTPProbe(options, exchange, target, context);
  } finally {
    timer.cancel();
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    else if (signal && context) context.aborts.delete(signal, exchange);
  }
}

/** The first request of an httpGet probe, or why it cannot be sent; for {@link runHttpProbe}. */
export function prepareHttpTarget(request: HttpProbeRequest): ProbeHttpTarget | Error {
  return targetOf(request.url, request.headers);
}

function targetOf(url: URL, headers: ReadonlyArray<readonly [string, string]>): ProbeHttpTarget | Error {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return new Error(`unsupported protocol scheme ${JSON.stringify(url.protocol.slice(0, -1))}`);
  }
  try {
    return buildProbeHttpTarget(url, headers);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

async function doHTTPProbe(
  options: HttpProbeOptions,
  exchange: Exchange,
  prepared: ProbeHttpTarget | Error | undefined,
  context: HttpProbeContext | undefined,
): Promise<ProbeActionResult> {
  const original = options.request.url;
  const originalHost = original.hostname;
  const follow = options.followNonLocalRedirects === true;
  let url = original;
  let headers = options.request.headers;
  let target = prepared ?? targetOf(url, headers);
  const getOptions = {
    bodyLimit: maxRespBodyLength,
    // The body of a redirect that will be followed is not needed.
    wantsBody: (code: number, location: string | undefined) =>
      !(redirectCodes.has(code) && location !== undefined && willFollow(location, url, originalHost, follow)),
    ...(context ? { readBuffer: context.readBuffer } : {}),
  };
  let res: ProbeHttpResponse;
  for (let requests = 1; ; requests++) {
    try {
      if (target instanceof Error) throw target;
      if (exchange.why) throw new Error(exchange.why);
      const current = probeHttpGet(target, getOptions);
      exchange.current = current;
      res = await current.response;
    } catch (err) {
      if (err instanceof ProbeHttpError && err.phase === 'body') {
        throw new ProbeError('ProbeError', transportMessage(err, exchange), { cause: err });
      }
      return {
        result: 'Failure',
        output: `Get ${JSON.stringify(url.href)}: ${transportMessage(err, exchange)}`,
      };
    }
    const location = res.location;
    if (!redirectCodes.has(res.statusCode) || location === undefined) break;
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      return {
        result: 'Failure',
        output: `Get ${JSON.stringify(url.href)}: failed to parse Location header`,
      };
    }
    if (!follow && next.hostname !== originalHost) break;
    if (requests >= maxRequests) {
      return { result: 'Failure', output: `Get ${JSON.stringify(next.href)}: stopped after 10 redirects` };
    }
    // A Host override survives only a relative redirect, as in Go's client.
    if (isAbsolute(location)) headers = headers.filter(([n]) => n.toLowerCase() !== 'host');
    url = next;
    target = targetOf(url, headers);
  }

  const code = res.statusCode;
  if (code >= 200 && code < 400) {
    if (code >= 300)
      return { result: 'Warning', output: `Probe terminated redirects, Response body: ${res.body}` };
    return { result: 'Success', output: res.body };
  }
  // Upstream keeps the body out of the user-facing message (kubernetes#99425).
  return { result: 'Failure', output: `HTTP probe failed with statuscode: ${code}` };
}

function isAbsolute(location: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(location) || location.startsWith('//');
}

function willFollow(location: string, base: URL, originalHost: string, followNonLocal: boolean): boolean {
  if (followNonLocal) return true;
  try {
    return new URL(location, base).hostname === originalHost;
  } catch {
    return false;
  }
}

function transportMessage(err: unknown, exchange: Exchange): string {
  if (exchange.why === 'deadline')
    return 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)';
  if (exchange.why === 'canceled') return 'context canceled';
  return err instanceof Error ? err.message : String(err);
}
