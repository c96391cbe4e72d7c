import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { deepCopy, type Logger, type Pod } from '@kubelet-kit/core';
import type { Registry } from 'prom-client';
import type { AuthDecision, KubeletAuth } from './server-auth.js';
import { type ContainerLogsHost, serveContainerLogs } from './server-logs.js';
import { type StatsHandlers, serveStats } from './server-stats.js';
import type { StreamingServer } from './server-streaming.js';
import type { ServingTls } from './server-tls.js';

/** One health check; `check` returns an error message when unhealthy. */
export interface HealthCheck {
  readonly name: string;
  check(): string | undefined;
}

/** Options of {@link KubeletServer}. */
export interface KubeletServerOptions {
  /** Listen address; loopback by default, since the endpoints have no authentication. */
  readonly address?: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The pods with their current API status, for `/pods`. */
  readonly pods: () => Pod[];
  readonly healthChecks: readonly HealthCheck[];
  readonly registry: Registry;
  readonly logger: Logger;
  /** `/stats/summary`, `/metrics/resource`, `/metrics/probes`, `/runningpods/`, `/configz`; none when absent. */
  readonly stats?: StatsHandlers;
  // Transport and authentication (upstream ListenAndServeKubeletServer, InstallAuthFilter).
  /** Serve HTTPS with this key and certificate (and client CA); plain HTTP without. */
  readonly tls?: ServingTls;
  /** The filter in front of every request, upgrades included; none: everything is allowed. */
  readonly auth?: KubeletAuth;
  /** Upstream --read-only-port: the unauthenticated read-only subset over HTTP; 0 or unset: off. */
  readonly readOnlyPort?: number;
  /** `/exec`, `/attach`, `/portForward`, `/run`; absent → 404. */
  readonly streaming?: StreamingServer;
  /** `/containerLogs/{namespace}/{pod}/{container}`; absent, the path is not served. */
  readonly containerLogs?: ContainerLogsHost;
}

/**
 * The agent's HTTP endpoints: `/healthz` (with `?verbose`), `/pods` (a v1 PodList like the
 * kubelet's read-only `/pods`) and `/metrics` (Prometheus text).
 */
export class KubeletServer {
  readonly #options: KubeletServerOptions;
  #server: http.Server | undefined;
  #readOnlyServer: http.Server | undefined;
  /** The last `/pods` answer: a copy of the items it was made of, and its bytes. */
  #podsCache: { readonly items: readonly Pod[]; readonly body: Buffer } | undefined;

  constructor(options: KubeletServerOptions) {
    this.#options = options;
  }

  /** Starts listening; resolves with the bound address. */
  async start(): Promise<AddressInfo> {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      this.#filtered(req, res).catch((err: unknown) => this.#failed(req, res, err));
    };
    const tls = this.#options.tls;
    const server = tls
      ? https.createServer(
          {
            key: tls.key,
            cert: tls.cert,
            // Client certificates are asked for, not required: the auth filter decides.
            ...(tls.ca ? { ca: tls.ca, requestCert: true, rejectUnauthorized: false } : {}),
            ...(tls.minVersion ? { minVersion: tls.minVersion } : {}),
            ...(tls.ciphers ? { ciphers: tls.ciphers } : {}),
          },
          handler,
        )
      : http.createServer(handler);
    this.#server = server;
    // Streaming: upgraded exec/attach/portForward connections, behind the same auth filter.
    server.on('upgrade', (req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => {
      void this.#upgrade(req, socket, head).catch((err: unknown) => {
        this.#options.logger.error({ err: String(err), url: req.url }, 'upgrade handler failed');
        socket.destroy();
      });
    });
    const address = this.#options.address ?? '127.0.0.1';
    await listen(server, this.#options.port, address);
    const readOnlyPort = this.#options.readOnlyPort ?? 0;
    if (readOnlyPort > 0) {
      const readOnly = http.createServer((req, res) => {
        this.#readOnly(req, res).catch((err: unknown) => this.#failed(req, res, err));
      });
      this.#readOnlyServer = readOnly;
      await listen(readOnly, readOnlyPort, address);
    }
    return server.address() as AddressInfo;
  }

  /** The read-only server's address, when `readOnlyPort` is set. */
  readOnlyAddress(): AddressInfo | undefined {
    return (this.#readOnlyServer?.address() as AddressInfo | null) ?? undefined;
  }

  /**
   * The auth filter's decision for a request: what every handler, and every `upgrade`
   * (exec, attach, port-forward), must ask before serving it.
   */
  async authorizeRequest(req: http.IncomingMessage): Promise<AuthDecision> {
    const auth = this.#options.auth;
    if (!auth)
      return { allowed: true, user: { name: 'system:anonymous', groups: ['system:unauthenticated'] } };
    return auth.authorizeRequest(req);
  }

  async stop(): Promise<void> {
    this.#options.streaming?.closeAll();
    for (const server of [this.#server, this.#readOnlyServer]) {
      if (!server) continue;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    this.#server = undefined;
    this.#readOnlyServer = undefined;
  }

  #failed(req: http.IncomingMessage, res: http.ServerResponse, err: unknown): void {
    this.#options.logger.error({ err: String(err), url: req.url }, 'http handler failed');
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('internal error\n');
  }

  /** Upstream's InstallAuthFilter: 401 without a user, 403 when not allowed, then the handlers. */
  async #filtered(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const decision = await this.authorizeRequest(req);
    if (!decision.allowed) {
      res.writeHead(decision.status, {
        'content-type': 'text/plain; charset=utf-8',
        'x-content-type-options': 'nosniff',
      });
      res.end(decision.message);
      return;
    }
    return this.#handle(req, res);
  }

  /** An upgraded request (exec, attach, port-forward): the auth filter first, as for any other. */
  async #upgrade(
    req: http.IncomingMessage,
    socket: import('node:stream').Duplex,
    head: Buffer,
  ): Promise<void> {
    const decision = await this.authorizeRequest(req);
    if (!decision.allowed) {
      const body = Buffer.from(decision.message);
      socket.end(
        `HTTP/1.1 ${decision.status} ${http.STATUS_CODES[decision.status] ?? ''}\r\n` +
          'Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n' +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString()}`,
      );
      return;
    }
    if (this.#options.streaming) await this.#options.streaming.handleUpgrade(req, socket, head);
    else socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
  }

  /** The read-only port's subset (upstream InstallDefaultHandlers without the debugging ones). */
  async #readOnly(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const p = new URL(req.url ?? '/', 'http://localhost').pathname;
    const served = ['/healthz', '/pods', '/stats', '/metrics', '/spec'].some(
      (base) => p === base || p.startsWith(`${base}/`),
    );
    if (!served) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('404 page not found\n');
      return;
    }
    return this.#handle(req, res);
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (this.#options.stats && (await serveStats(this.#options.stats, req, url, res))) return;
    // Streaming (/exec, /attach, /portForward, /run; GET and POST).
    if (this.#options.streaming && (await this.#options.streaming.handleRequest(req, res))) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' });
      res.end('method not allowed\n');
      return;
    }
    if (this.#options.containerLogs && (await serveContainerLogs(this.#options.containerLogs, url, res)))
      return;
    switch (url.pathname) {
      case '/healthz':
        return this.#healthz(url, res);
      case '/pods':
      case '/pods/': {
        const body = this.#podsBody();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
        return;
      }
      case '/metrics': {
        const text = await this.#options.registry.metrics();
        res.writeHead(200, { 'content-type': this.#options.registry.contentType });
        res.end(text);
        return;
      }
      default:
        if (url.pathname.startsWith('/healthz/') && this.#healthzCheck(url.pathname.slice(9), res)) return;
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('404 page not found\n');
    }
  }

  /**
   * The `/pods` body. A client that polls `/pods` (a benchmark every 100 ms, a monitor) mostly
   * gets what it got before; serializing the ~300 KB list of 110 pods each time made garbage the
   * heap then kept as slack (kubelet-kit issue #28). So the bytes of the last answer are kept with
   * a private copy of the pods they were made of, and served again while the current pods are
   * the same JSON value, key order included; any difference serializes them anew.
   */
  #podsBody(): Buffer {
    const items = this.#options.pods();
    const cached = this.#podsCache;
    if (cached && sameJson(cached.items, items)) return cached.body;
    const body = Buffer.from(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items }));
    // A copy: the items share objects with the agent's state, which may change in place.
    this.#podsCache = { items: deepCopy(items), body };
    return body;
  }

  /** Upstream's `ping` and `log` come first, then the agent's checks (as its healthz installs). */
  #checks(): readonly HealthCheck[] {
    return [pingCheck, logCheck, ...this.#options.healthChecks];
  }

  #healthz(url: URL, res: http.ServerResponse): void {
    const checks = this.#checks();
    const excluded = new Set(url.searchParams.getAll('exclude'));
    let out = '';
    const failed: string[] = [];
    for (const c of checks) {
      if (excluded.delete(c.name)) {
        out += `[+]${c.name} excluded: ok\n`;
        continue;
      }
      const error = c.check();
      if (error === undefined) out += `[+]${c.name} ok\n`;
      else {
        // The endpoint is unauthenticated: the reason goes to the log and to /healthz/<name>.
        out += `[-]${c.name} failed: reason withheld\n`;
        failed.push(`[-]${c.name} failed: ${error}`);
      }
    }
    if (excluded.size > 0) {
      const names = [...excluded].sort().map((n) => JSON.stringify(n));
      out += `warn: some health checks cannot be excluded: no matches for ${names.join(',')}\n`;
    }
    if (failed.length > 0) {
      this.#options.logger.info({ failed }, 'healthz check failed');
      res.writeHead(500, healthzHeaders);
      res.end(`${out}healthz check failed\n`);
      return;
    }
    res.writeHead(200, healthzHeaders);
    res.end(url.searchParams.has('verbose') ? `${out}healthz check passed\n` : 'ok');
  }

  /** `/healthz/<name>`: one check, with its reason when it fails. */
  #healthzCheck(name: string, res: http.ServerResponse): boolean {
    const check = this.#checks().find((c) => c.name === name);
    if (!check) return false;
    const error = check.check();
    if (error === undefined) {
      res.writeHead(200, healthzHeaders);
      res.end('ok');
    } else {
      res.writeHead(500, healthzHeaders);
      res.end(`internal server error: ${error}\n`);
    }
    return true;
  }
}

/**
 * Whether `a` and `b` serialize to the same JSON text. Conservative: plain objects must have the
 * same own keys in the same order (an `undefined` member counts, though JSON leaves it out), Dates
 * the same time, and any other object that is not a plain object or array (its `toJSON` could say
 * anything) counts as different. Allocates nothing, so that a hit costs no garbage.
 * @internal
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const protoA = Object.getPrototypeOf(a);
  const protoB = Object.getPrototypeOf(b);
  if (protoA === Date.prototype && protoB === Date.prototype)
    return (
      (a as Date).getTime() === (b as Date).getTime() &&
      !Object.hasOwn(a, 'toJSON') &&
      !Object.hasOwn(b, 'toJSON')
    );
  if ((protoA !== Object.prototype && protoA !== null) || (protoB !== Object.prototype && protoB !== null))
    return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  if (Object.hasOwn(ra, 'toJSON') || Object.hasOwn(rb, 'toJSON')) return false;
  // Same keys in the same order: the i-th key of `a` is the i-th key of `b` (objects have few keys).
  let i = 0;
  for (const key in ra) {
    if (!Object.hasOwn(ra, key) || keyAt(rb, i) !== key || !sameJson(ra[key], rb[key])) return false;
    i++;
  }
  return keyAt(rb, i) === undefined;
}

/** The `i`-th enumerable key of `o` (for...in order, own keys only), or undefined past the end. */
function keyAt(o: Record<string, unknown>, i: number): string | undefined {
  let n = 0;
  for (const key in o) {
    if (!Object.hasOwn(o, key)) return undefined;
    if (n++ === i) return key;
  }
  return undefined;
}

function listen(server: http.Server, port: number, address: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

const healthzHeaders = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

const pingCheck: HealthCheck = { name: 'ping', check: () => undefined };
// Upstream's `log` fails when klog has not flushed for 2 minutes; our log lines are written out
// at the end of each event-loop turn, so a server that answers has flushed.
const logCheck: HealthCheck = { name: 'log', check: () => undefined };
