import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger, Pod } from '@kubelet-kit/core';
import type { Registry } from 'prom-client';
import { type ContainerLogsHost, serveContainerLogs } from './server-logs.js';

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

  constructor(options: KubeletServerOptions) {
    this.#options = options;
  }

  /** Starts listening; resolves with the bound address. */
  async start(): Promise<AddressInfo> {
    const server = http.createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        this.#options.logger.error({ err: String(err), url: req.url }, 'http handler failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      });
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port, this.#options.address ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return server.address() as AddressInfo;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
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
        const body = JSON.stringify({
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: {},
          items: this.#options.pods(),
        });
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

const healthzHeaders = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

const pingCheck: HealthCheck = { name: 'ping', check: () => undefined };
// Upstream's `log` fails when klog has not flushed for 2 minutes; our log lines are written out
// at the end of each event-loop turn, so a server that answers has flushed.
const logCheck: HealthCheck = { name: 'log', check: () => undefined };
