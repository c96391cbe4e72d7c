// The kubelet's streaming endpoints (upstream pkg/kubelet/server/server.go getExec, getAttach,
// getPortForward, getRun): the agent asks the runtime for a streaming URL through CRI
// Exec/Attach/PortForward and proxies the client's connection to it, upgraded or not, as
// upstream's kubelet does since it stopped redirecting (its UpgradeAwareHandler). The bytes of
// the upgraded connection (SPDY/3.1 or WebSocket, any channel protocol) pass unchanged both ways,
// so the protocol negotiation is between the client and the runtime's streaming server.
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger, Pod, RuntimePod } from '@kubelet-kit/core';
import { CriError, type RuntimeServiceClient } from '@kubelet-kit/cri';

/** The CRI calls the streaming endpoints make. @internal */
export type StreamingRuntimeService = Pick<
  RuntimeServiceClient,
  'exec' | 'attach' | 'portForward' | 'execSync'
>;

/** Options of {@link StreamingServer}. @internal */
export interface StreamingServerOptions {
  /** The pods the kubelet knows (upstream GetPodByName). */
  readonly pods: () => readonly Pod[];
  /** The runtime's running pods (upstream containerRuntime.GetPods(false)). */
  readonly runtimePods: () => Promise<readonly RuntimePod[]>;
  readonly runtimeService: StreamingRuntimeService;
  readonly logger: Logger;
}

/** An answer other than a proxied one: an HTTP status with a plain-text message. @internal */
export class StreamingHttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'StreamingHttpError';
    this.status = status;
  }
}

interface ContainerRoute {
  kind: 'exec' | 'attach' | 'run';
  namespace: string;
  pod: string;
  uid?: string;
  container: string;
}
type Route = ContainerRoute | { kind: 'portForward'; namespace: string; pod: string; uid?: string };

/**
 * `/exec/{ns}/{pod}[/{uid}]/{container}`, `/attach/…`, `/portForward/{ns}/{pod}[/{uid}]` and
 * `/run/{ns}/{pod}[/{uid}]/{container}` (POST, `cmd`).
 * @internal
 */
export class StreamingServer {
  readonly #options: StreamingServerOptions;
  /** Upgraded client connections: the HTTP server no longer tracks them. */
  readonly #sockets = new Set<Duplex>();

  constructor(options: StreamingServerOptions) {
    this.#options = options;
  }

  /** Cuts every proxied session (the agent is stopping). */
  closeAll(): void {
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
  }

  /** True for a path this server answers. */
  static handles(pathname: string): boolean {
    return route(pathname) !== undefined;
  }

  /** A plain request: `/run`, or an exec/attach/portForward without upgrade (proxied as is). */
  async handleRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const r = route(url.pathname);
    if (!r) return false;
    try {
      if (r.kind === 'run') {
        await this.#run(r, url, req, res);
        return true;
      }
      if (req.method !== 'GET' && req.method !== 'POST') {
        throw new StreamingHttpError(405, 'method not allowed');
      }
      const target = await this.#streamingUrl(r, url.searchParams);
      proxyPlain(req, res, target, this.#options.logger);
    } catch (err) {
      writeError(res, err);
    }
    return true;
  }

  /** An upgrade request (the server's `upgrade` event). Answers 404 for other paths. */
  async handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    const url = new URL(req.url ?? '/', 'http://localhost');
    const r = route(url.pathname);
    try {
      if (!r || r.kind === 'run') throw new StreamingHttpError(404, '404 page not found');
      if (req.method !== 'GET' && req.method !== 'POST')
        throw new StreamingHttpError(405, 'method not allowed');
      const target = await this.#streamingUrl(r, url.searchParams);
      proxyUpgrade(req, socket, head, target, this.#options.logger);
    } catch (err) {
      const { status, message } = errorAnswer(err);
      const body = `${message}\n`;
      socket.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\n` +
          `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
    }
  }

  /** The runtime's streaming URL for a request (upstream GetExec / GetAttach / GetPortForward). */
  async #streamingUrl(r: Route, q: URLSearchParams): Promise<URL> {
    const rs = this.#options.runtimeService;
    let answer: { url: string };
    if (r.kind === 'portForward') {
      const sandboxId = await this.#findSandbox(r.namespace, r.pod, r.uid);
      answer = await rs.portForward({ podSandboxId: sandboxId, port: portsOf(q) });
    } else {
      const containerId = await this.#findContainer(r.namespace, r.pod, r.uid, r.container);
      const opts = streamOptions(q);
      if (r.kind === 'exec') {
        const cmd = q.getAll('command');
        if (cmd.length === 0) throw new StreamingHttpError(400, 'you must specify a command');
        answer = await rs.exec({ containerId, cmd, ...opts });
      } else answer = await rs.attach({ containerId, ...opts });
    }
    let target: URL;
    try {
      target = new URL(answer.url);
    } catch {
      throw new StreamingHttpError(
        500,
        `runtime returned an invalid streaming URL ${JSON.stringify(answer.url)}`,
      );
    }
    if (target.protocol !== 'http:') {
      // TLS streaming (enable_tls_streaming) would need the runtime's CA; not supported.
      throw new StreamingHttpError(500, `streaming URL scheme ${target.protocol} is not supported`);
    }
    return target;
  }

  /** `/run`: ExecSync, the output (stdout then stderr) as the body (upstream handleRun). */
  async #run(
    r: ContainerRoute,
    url: URL,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    if (req.method !== 'POST') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'POST' });
      res.end('method not allowed\n');
      return;
    }
    const form = new URLSearchParams(url.search);
    const type = req.headers['content-type'] ?? '';
    const body = await readBody(req, 1 << 20);
    if (type.startsWith('application/x-www-form-urlencoded')) {
      for (const [k, v] of new URLSearchParams(body)) if (!form.has(k)) form.append(k, v);
    }
    const cmd = (form.get('cmd') ?? '').split(/\s+/).filter((s) => s !== '');
    if (cmd.length === 0) throw new StreamingHttpError(400, 'missing cmd');
    const containerId = await this.#findContainer(r.namespace, r.pod, r.uid, r.container);
    const out = await this.#options.runtimeService.execSync({ containerId, cmd, timeout: 0 });
    if (out.exitCode !== 0) {
      // As the runtime client's CodeExitError: the output is in the message, not the body.
      const stderr = Buffer.from(out.stderr).toString('utf8');
      throw new StreamingHttpError(500, `command '${cmd.join(' ')}' exited with ${out.exitCode}: ${stderr}`);
    }
    const data = Buffer.concat([Buffer.from(out.stdout), Buffer.from(out.stderr)]);
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(data.length) });
    res.end(data);
  }

  #findPod(namespace: string, name: string): Pod {
    const pod = this.#options
      .pods()
      .find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
    if (!pod) throw new StreamingHttpError(404, 'pod does not exist');
    return pod;
  }

  async #runtimePod(
    namespace: string,
    name: string,
    uid: string | undefined,
  ): Promise<RuntimePod | undefined> {
    const pod = this.#findPod(namespace, name);
    const want = uid ?? pod.metadata?.uid;
    const pods = await this.#options.runtimePods();
    return pods.find((p) => p.id === want);
  }

  /** Upstream findContainer: the running container of that name in the runtime's pod. */
  async #findContainer(
    namespace: string,
    name: string,
    uid: string | undefined,
    container: string,
  ): Promise<string> {
    const rp = await this.#runtimePod(namespace, name, uid);
    const c = rp?.containers.find((x) => x.name === container);
    if (!c) throw new StreamingHttpError(404, `container not found (${JSON.stringify(container)})`);
    return c.id.id;
  }

  async #findSandbox(namespace: string, name: string, uid: string | undefined): Promise<string> {
    const rp = await this.#runtimePod(namespace, name, uid);
    const s = rp?.sandboxes[0];
    if (!s) throw new StreamingHttpError(404, `pod not found (${JSON.stringify(`${name}_${namespace}`)})`);
    return s.id.id;
  }
}

function route(pathname: string): Route | undefined {
  const parts = pathname.split('/').slice(1);
  const seg = parts.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return '';
    }
  });
  if (seg.some((s) => s === '')) return undefined;
  const [kind, namespace = '', pod = ''] = seg;
  if (kind === 'portForward') {
    if (seg.length === 3) return { kind, namespace, pod };
    if (seg.length === 4) return { kind, namespace, pod, uid: seg[3] as string };
    return undefined;
  }
  if (kind === 'exec' || kind === 'attach' || kind === 'run') {
    if (seg.length === 4) return { kind, namespace, pod, container: seg[3] as string };
    if (seg.length === 5) return { kind, namespace, pod, uid: seg[3] as string, container: seg[4] as string };
  }
  return undefined;
}

/** The kubelet's `input`/`output`/`error`/`tty` = 1, or the API's `stdin`/`stdout`/`stderr` = true. */
function streamOptions(q: URLSearchParams): {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
} {
  const flag = (kubelet: string, api: string) => {
    const v = q.get(kubelet) ?? q.get(api);
    return v === '1' || v === 'true';
  };
  const stdin = flag('input', 'stdin');
  const stdout = flag('output', 'stdout');
  let stderr = flag('error', 'stderr');
  const tty = flag('tty', 'tty');
  // Upstream: a TTY merges stderr into stdout, so a stderr stream is dropped.
  if (tty && stderr) stderr = false;
  if (!stdin && !stdout && !stderr) {
    throw new StreamingHttpError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  }
  return { stdin, stdout, stderr, tty };
}

/** `port` query values (WebSocket port forwarding names its ports up front; SPDY in streams). */
function portsOf(q: URLSearchParams): number[] {
  const ports: number[] = [];
  for (const raw of q.getAll('port')) {
    for (const s of raw.split(',')) {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 1 || n > 65535) {
        throw new StreamingHttpError(400, `invalid port ${JSON.stringify(s)}`);
      }
      ports.push(n);
    }
  }
  return ports;
}

function errorAnswer(err: unknown): { status: number; message: string } {
  if (err instanceof StreamingHttpError) return { status: err.status, message: err.message };
  // upstream streaming.WriteError: the gRPC code picks the HTTP status.
  if (err instanceof CriError) {
    const status =
      err.code === 'NotFound'
        ? 404
        : err.code === 'InvalidArgument'
          ? 400
          : err.code === 'Unavailable'
            ? 503
            : err.code === 'DeadlineExceeded'
              ? 504
              : 500;
    return { status, message: err.message };
  }
  return { status: 500, message: err instanceof Error ? err.message : String(err) };
}

function writeError(res: http.ServerResponse, err: unknown): void {
  const { status, message } = errorAnswer(err);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(`${message}\n`);
}

async function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    n += b.length;
    if (n > limit) throw new StreamingHttpError(413, 'request body too large');
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Header names the proxy does not forward: hop-by-hop ones are rewritten, credentials stay here. */
const dropped = /^(host|authorization|proxy-authorization)$/i;

/** Upstream UpgradeAwareHandler for a request without upgrade: the runtime's answer, relayed. */
function proxyPlain(req: http.IncomingMessage, res: http.ServerResponse, target: URL, logger: Logger): void {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !dropped.test(k)) headers[k] = v;
  const out = http.request({
    host: target.hostname,
    port: target.port,
    path: `${target.pathname}${target.search}`,
    method: req.method,
    headers: { ...headers, host: target.host },
  });
  out.on('response', (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  out.on('error', (e) => {
    logger.info({ err: e.message, url: target.href }, 'streaming proxy: runtime unreachable');
    if (res.headersSent) res.destroy();
    else {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`error dialing backend: ${e.message}\n`);
    }
  });
  req.pipe(out);
}

/**
 * Upstream UpgradeAwareHandler.tryUpgrade: the request head is sent to the runtime's streaming
 * server with the runtime's path, then bytes pass both ways. The runtime's answer (101 or an
 * error) reaches the client unchanged, so a refused upgrade is relayed too.
 */
function proxyUpgrade(
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: URL,
  logger: Logger,
): void {
  const port = Number(target.port || 80);
  const backend = net.connect({ host: target.hostname, port });
  let connected = false;
  backend.once('connect', () => {
    connected = true;
    const lines = [`${req.method} ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i] ?? '';
      if (!dropped.test(k)) lines.push(`${k}: ${req.rawHeaders[i + 1] ?? ''}`);
    }
    backend.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) backend.write(head);
    backend.pipe(socket);
    socket.pipe(backend);
  });
  backend.on('error', (e) => {
    logger.info({ err: e.message, url: target.href }, 'streaming proxy: runtime connection failed');
    if (!connected) {
      const body = `error dialing backend: ${e.message}\n`;
      socket.end(
        `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
    } else socket.destroy();
  });
  socket.on('close', () => backend.destroy());
  // A clean end reaches the client through pipe(); only a broken backend cuts the client off.
  backend.on('close', (hadError) => {
    if (connected && hadError) socket.destroy();
  });
}
