import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
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
  /** Follow redirects to another host too; the kubelet never does (default false). */
  readonly followNonLocalRedirects?: boolean;
  readonly signal?: AbortSignal;
}

class DeadlineError extends Error {}

/**
 * One HTTP GET probe (upstream `pkg/probe/http.DoHTTPProbe` with the kubelet's client): no
 * keep-alive, no certificate checks, redirects followed only on the same host. 200–299 is a
 * success with the body as output; 300–399 (a redirect not followed) a warning; anything else
 * a failure `HTTP probe failed with statuscode: N`. Transport errors and timeouts are failures,
 * not errors; an error while reading the body is an error.
 */
export async function httpProbe(options: HttpProbeOptions): Promise<ProbeActionResult> {
  const controller = new AbortController();
  const timer = options.clock.setTimeout(() => controller.abort(new DeadlineError()), options.timeoutMs);
  const onAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await doHTTPProbe(options, controller.signal);
  } finally {
    timer.cancel();
    options.signal?.removeEventListener('abort', onAbort);
  }
}

async function doHTTPProbe(options: HttpProbeOptions, signal: AbortSignal): Promise<ProbeActionResult> {
  const original = options.request.url;
  let url = original;
  let headers = toOutgoing(options.request.headers);
  let res: IncomingMessage;
  for (let requests = 1; ; requests++) {
    try {
      res = await get(url, headers, signal);
    } catch (err) {
      return {
        result: 'Failure',
        output: `Get ${JSON.stringify(url.href)}: ${transportMessage(err, signal)}`,
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
    if (requests >= maxRequests) {
      res.destroy();
      return { result: 'Failure', output: `Get ${JSON.stringify(next.href)}: stopped after 10 redirects` };
    }
    res.destroy();
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
    throw new ProbeError('ProbeError', transportMessage(err, signal), { cause: err });
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

function get(url: URL, headers: OutgoingHttpHeaders, signal: AbortSignal): Promise<IncomingMessage> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(
      new Error(`unsupported protocol scheme ${JSON.stringify(url.protocol.slice(0, -1))}`),
    );
  }
  return new Promise<IncomingMessage>((resolve, reject) => {
    const common = { method: 'GET', headers, agent: false as const, signal };
    const req =
      url.protocol === 'https:'
        ? https.request(url, { ...common, rejectUnauthorized: false }, resolve)
        : http.request(url, common, resolve);
    req.once('error', reject);
    req.end();
  });
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
        res.destroy();
      }
    });
    res.once('end', () => settle(() => resolve(Buffer.concat(chunks).toString('utf8'))));
    res.once('error', (err) => settle(() => reject(err)));
    res.once('close', () => {
      if (!res.complete) settle(() => reject(new Error('unexpected EOF')));
    });
  });
}

function transportMessage(err: unknown, signal: AbortSignal): string {
  if (signal.aborted && signal.reason instanceof DeadlineError) {
    return 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)';
  }
  if (signal.aborted) return 'context canceled';
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
