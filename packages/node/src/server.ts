import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger, Pod } from '@kubelet-kit/core';
import type { Registry } from 'prom-client';

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
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('404 page not found\n');
    }
  }

  #healthz(url: URL, res: http.ServerResponse): void {
    const lines: string[] = [];
    let ok = true;
    for (const c of this.#options.healthChecks) {
      const error = c.check();
      if (error === undefined) lines.push(`[+]${c.name} ok`);
      else {
        ok = false;
        lines.push(`[-]${c.name} failed: ${error}`);
      }
    }
    res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8' });
    if (ok && !url.searchParams.has('verbose')) res.end('ok');
    else res.end(`${lines.join('\n')}\nhealthz check ${ok ? 'passed' : 'failed'}\n`);
  }
}
