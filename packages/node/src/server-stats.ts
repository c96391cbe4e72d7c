import type http from 'node:http';
import type { Logger } from '@kubelet-kit/core';
import type { Registry } from 'prom-client';
import { renderResourceMetrics } from './stats/resource-metrics.js';
import type { Summary } from './stats/summary-types.js';

/**
 * What the stats endpoints read (upstream's `HostInterface` parts and the resource analyzer).
 *
 * @public
 */
export interface StatsHandlers {
  /** The full summary (upstream `SummaryProvider.Get(updateStats=true)`). */
  readonly summary: () => Promise<Summary>;
  /** Cpu and memory only, CPU samples left alone (upstream `GetCPUAndMemoryStats`). */
  readonly cpuAndMemory: () => Promise<Summary>;
  /** The runtime's running pods as a v1 PodList's items (upstream `GetRunningPods`). */
  readonly runningPods: () => Promise<readonly object[]>;
  /** The effective KubeletConfiguration, for `/configz`. */
  readonly configz: () => object;
  /** The registry holding the prober's `prober_probe_*` metrics, for `/metrics/probes`. */
  readonly probeRegistry: Registry;
  readonly logger: Logger;
}

const probeMetricNames = ['prober_probe_duration_seconds', 'prober_probe_total'];
const maxFormBytes = 10 * 1024 * 1024;

/**
 * Serves `/stats/summary` (GET and POST, as upstream), `/metrics/resource`, `/metrics/probes`,
 * `/runningpods/` and `/configz`. Returns false for a path it does not own.
 *
 * @internal
 */
export async function serveStats(
  h: StatsHandlers,
  req: http.IncomingMessage,
  url: URL,
  res: http.ServerResponse,
): Promise<boolean> {
  const method = req.method ?? 'GET';
  const path = url.pathname;
  if (path === '/stats/summary' || path === '/stats/summary/') {
    if (method !== 'GET' && method !== 'POST' && method !== 'HEAD') return methodNotAllowed(res, 'GET, POST');
    // Upstream reads the parameter with ParseForm: the query, or a urlencoded POST body.
    const params = new URLSearchParams(url.search);
    if (method === 'POST' && /application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? '')) {
      for (const [k, v] of new URLSearchParams(await readBody(req))) params.append(k, v);
    }
    const only = params.get('only_cpu_and_memory');
    if (only !== null && only !== 'true' && only !== 'false') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`Internal Error: parse form failed: invalid only_cpu_and_memory ${JSON.stringify(only)}\n`);
      return true;
    }
    try {
      const summary = only === 'true' ? await h.cpuAndMemory() : await h.summary();
      json(res, 200, summary);
    } catch (err) {
      h.logger.error({ err: String(err) }, 'failed to get the summary');
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`Internal Error: failed to get node info: ${String(err)}\n`);
    }
    return true;
  }
  if (method !== 'GET' && method !== 'HEAD') {
    if (
      ['/metrics/resource', '/metrics/probes', '/runningpods', '/runningpods/', '/configz'].includes(path)
    ) {
      return methodNotAllowed(res, 'GET, HEAD');
    }
    return false;
  }
  switch (path) {
    case '/metrics/resource': {
      let text: string;
      try {
        text = renderResourceMetrics(await h.cpuAndMemory(), false);
      } catch (err) {
        h.logger.error({ err: String(err) }, 'error getting summary for resource metrics');
        text = renderResourceMetrics(undefined, true);
      }
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(text);
      return true;
    }
    case '/metrics/probes': {
      let text = '';
      for (const name of probeMetricNames) {
        if (h.probeRegistry.getSingleMetric(name))
          text += await h.probeRegistry.getSingleMetricAsString(name);
        if (text && !text.endsWith('\n')) text += '\n';
      }
      res.writeHead(200, { 'content-type': h.probeRegistry.contentType });
      res.end(text);
      return true;
    }
    case '/runningpods':
    case '/runningpods/': {
      const items = await h.runningPods();
      json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items });
      return true;
    }
    case '/configz':
      json(res, 200, { kubeletconfig: h.configz() });
      return true;
    default:
      return false;
  }
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function methodNotAllowed(res: http.ServerResponse, allow: string): true {
  res.writeHead(405, { 'content-type': 'text/plain', allow });
  res.end('method not allowed\n');
  return true;
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxFormBytes) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
