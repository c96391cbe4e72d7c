import http, { type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Clock } from '@kubelet-kit/core';
import { ProbeError } from '../errors.js';
import type { ProbeActionResult } from '../types.js';
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
  /** Connection agents to reuse across probes (default: new ones for this probe). */
  readonly agents?: HttpProbeAgents;
  /** Follow redirects to another host too; the kubelet never does (default false). */
  readonly followNonLocalRedirects?: boolean;
  readonly signal?: AbortSignal;
}

/** One probe's exchange: the request in flight and why it was cut short, if it was. */
interface Exchange {
  current: ClientRequest | undefined;
  /** 'deadline' when the timeout fired, 'canceled' when the caller's signal aborted. */
  cut: 'deadline' | 'canceled' | undefined;
  readonly agents: HttpProbeAgents;
}

/** The agents probes connect through (no keep-alive: every probe opens its own connection). */
export interface HttpProbeAgents {
  readonly http: http.Agent;
  readonly https: https.Agent;
}

/** Agents for {@link HttpProbeOptions.agents}: no keep-alive, no certificate checks. */
export function newHttpProbeAgents(): HttpProbeAgents {
  return {
    http: new http.Agent({ keepAlive: false }),
    https: new https.Agent({ keepAlive: false, rejectUnauthorized: false }),
  };
}

/**
 * One HTTP GET probe (upstream `pkg/probe/http.DoHTTPProbe` with the kubelet's client): no
 * keep-alive, no certificate checks, redirects followed only on the same host. 200–299 is a
 * success with the body as output; 300–399 (a redirect not followed) a warning; anything else
 * a failure `HTTP probe failed with statuscode: N`. Transport errors and timeouts are failures,
 * not errors; an error while reading the body is an error.
 */
export async function httpProbe(options: HttpProbeOptions): Promise<ProbeActionResult> {
  const exchange: Exchange = {
    current: undefined,
    cut: undefined,
    agents: options.agents ?? newHttpProbeAgents(),
  };
  const cut = (why: 'deadline' | 'canceled') => {
    exchange.cut ??= why;
    exchange.current?.destroy(new Error(why));
  };
  const timer = options.clock.setTimeout(() => cut('deadline'), options.timeoutMs);
  const onAbort = () => cut('canceled');
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await doHTTPProbe(options, exchange);
  } finally {
    timer.cancel();
    options.signal?.removeEventListener('abort', onAbort);
  }
}

async function doHTTPProbe(options: HttpProbeOptions, exchange: Exchange): Promise<ProbeActionResult> {
  const original = options.request.url;
  let url = original;
  let headers = toOutgoing(options.request.headers);
  let res: IncomingMessage;
  for (let requests = 1; ; requests++) {
    try {
      res = await get(url, headers, exchange);
    } catch (err) {
      return {
        result: 'Failure',
        output: `Get ${JSON.stringify(url.href)}: ${transportMessage(err, exchange)}`,
      };
    }
    const location = res.headers.location;
    if (!redirectCodes.has(res.statusCode ?? 0) || location === undefined) break;
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      return {
        result: 'Failure',
        output: `Get ${JSON.stringify(url.href)}: failed to parse Location header`,
      };
    }
    if (!options.followNonLocalRedirects && next.hostname !== original.hostname) break;
    abandon(res);
    if (requests >= maxRequests) {
      return { result: 'Failure', output: `Get ${JSON.stringify(next.href)}: stopped after 10 redirects` };
    }
    // A Host override survives only a relative redirect, as in Go's client.
    if (/^[a-z][a-z0-9+.-]*:/i.test(location) || location.startsWith('//')) {
      headers = withoutHost(headers);
    }
    url = next;
  }

  let body: string;
  try {
    body = await readAtMost(res, maxRespBodyLength);
  } catch (err) {
    throw new ProbeError('ProbeError', transportMessage(err, exchange), { cause: err });
  }
  const code = res.statusCode ?? 0;
  if (code >= 200 && code < 400) {
    if (code >= 300)
      return { result: 'Warning', output: `Probe terminated redirects, Response body: ${body}` };
    return { result: 'Success', output: body };
  }
  // Upstream keeps the body out of the user-facing message (kubernetes#99425).
  return { result: 'Failure', output: `HTTP probe failed with statuscode: ${code}` };
}

function get(url: URL, headers: OutgoingHttpHeaders, exchange: Exchange): Promise<IncomingMessage> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(
      new Error(`unsupported protocol scheme ${JSON.stringify(url.protocol.slice(0, -1))}`),
    );
  }
  if (exchange.cut) return Promise.reject(new Error(exchange.cut));
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req =
      url.protocol === 'https:'
        ? https.request(url, { method: 'GET', headers, agent: exchange.agents.https }, resolve)
        : http.request(url, { method: 'GET', headers, agent: exchange.agents.http }, resolve);
    exchange.current = req;
    // Kept for the request's life: an error after the response (a reset while the body is read)
    // must not go unhandled; rejecting a settled promise is a no-op.
    req.on('error', reject);
    req.end();
  });
}

/**
 * Drops a response's connection with a reset rather than a FIN: a probe connection has nothing
 * left to say, and a reset leaves no TIME_WAIT socket behind, which at a thousand probes a
 * second would exhaust the ephemeral ports (upstream sets a 1 s SO_LINGER for the same reason).
 */
function abandon(res: IncomingMessage): void {
  const socket = res.socket as Socket | null;
  // A reset is only possible before the socket started to shut down; a failed reset would leak
  // the handle.
  // (TLS sockets cannot be reset from Node: they close normally.)
  if (
    socket &&
    !(socket instanceof TLSSocket) &&
    !socket.destroyed &&
    !socket.connecting &&
    !socket.writableEnded
  ) {
    socket.resetAndDestroy();
  } else {
    res.destroy();
  }
}

function readAtMost(res: IncomingMessage, limit: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
    };
    res.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= limit) {
        // Truncation is not an error: stop reading and drop the connection.
        settle(() => resolve(Buffer.concat(chunks).subarray(0, limit).toString('utf8')));
        abandon(res);
      }
    });
    // Ahead of the client's own end handler, which would start closing the socket gracefully.
    res.prependOnceListener('end', () => {
      settle(() =>
        resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')),
      );
      abandon(res);
    });
    res.once('error', (err) => settle(() => reject(err)));
    res.once('close', () => {
      if (!res.complete) settle(() => reject(new Error('unexpected EOF')));
    });
  });
}

function transportMessage(err: unknown, exchange: Exchange): string {
  if (exchange.cut === 'deadline')
    return 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)';
  if (exchange.cut === 'canceled') return 'context canceled';
  return err instanceof Error ? err.message : String(err);
}

function toOutgoing(pairs: ReadonlyArray<readonly [string, string]>): OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  const names = new Map<string, string>();
  for (const [name, value] of pairs) {
    const lower = name.toLowerCase();
    const key = names.get(lower) ?? name;
    names.set(lower, key);
    const prev = out[key];
    if (lower === 'host') {
      // Go sends one Host: the first value given.
      if (prev === undefined) out[key] = value;
    } else if (prev === undefined) out[key] = value;
    else out[key] = Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

function withoutHost(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([n]) => n.toLowerCase() !== 'host'));
}
