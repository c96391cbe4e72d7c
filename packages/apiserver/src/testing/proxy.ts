// The pod subresources the real API server forwards to the node's kubelet: pods/log →
// /containerLogs, pods/exec → /exec, pods/attach → /attach, pods/portforward → /portForward,
// at the Node's InternalIP (else Hostname) and status.daemonEndpoints.kubeletEndpoint.Port.
// Upgrades (SPDY, WebSocket) pass through as raw bytes both ways.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { JsonObject } from './patch.js';
import { StatusError } from './status.js';

// biome-ignore lint/suspicious/noExplicitAny: reads loosely typed Node objects
type Obj = Record<string, any>;

/** Where a kubelet listens. @internal */
export interface KubeletTarget {
  readonly host: string;
  readonly port: number;
  readonly path: string;
}

/** The kubelet URL path of a pod subresource request, or undefined for another subresource. @internal */
export function kubeletPath(
  namespace: string,
  pod: string,
  sub: string,
  query: URLSearchParams,
): string | undefined {
  const q = new URLSearchParams(query);
  const container = q.get('container') ?? '';
  q.delete('container');
  const qs = q.toString();
  const tail = qs ? `?${qs}` : '';
  const ns = encodeURIComponent(namespace);
  const p = encodeURIComponent(pod);
  const c = encodeURIComponent(container);
  switch (sub) {
    case 'log':
      return `/containerLogs/${ns}/${p}/${c}${tail}`;
    case 'exec':
      return `/exec/${ns}/${p}/${c}${tail}`;
    case 'attach':
      return `/attach/${ns}/${p}/${c}${tail}`;
    case 'portforward':
      return `/portForward/${ns}/${p}${tail}`;
    default:
      return undefined;
  }
}

/** The kubelet of the Node a pod is bound to (upstream's node connection info). @internal */
export function kubeletOf(pod: JsonObject, node: JsonObject | undefined, path: string): KubeletTarget {
  const p = pod as Obj;
  const n = node as Obj | undefined;
  const name = p.metadata?.name ?? '';
  if (!p.spec?.nodeName)
    throw new StatusError(400, 'BadRequest', `pod ${name} does not have a host assigned`);
  if (!n)
    throw new StatusError(404, 'NotFound', `nodes "${p.spec.nodeName}" not found`, {
      name: p.spec.nodeName,
      kind: 'nodes',
    });
  const addrs: Obj[] = n.status?.addresses ?? [];
  const host = (addrs.find((a) => a.type === 'InternalIP') ?? addrs.find((a) => a.type === 'Hostname'))
    ?.address;
  const port = n.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  if (!host)
    throw new StatusError(
      500,
      'InternalError',
      `node ${n.metadata?.name} has no InternalIP or Hostname address`,
    );
  return { host, port: typeof port === 'number' && port > 0 ? port : 10250, path };
}

/** Forwards a plain (non-upgrade) request and streams the kubelet's answer back. @internal */
export function proxyRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  target: KubeletTarget,
  scheme: 'http' | 'https',
  client?: KubeletClientCertificate,
): void {
  const headers = { ...req.headers, host: `${target.host}:${target.port}` };
  delete headers.authorization;
  const opts = { host: target.host, port: target.port, path: target.path, method: req.method, headers };
  const out =
    scheme === 'https'
      ? https.request({
          ...opts,
          rejectUnauthorized: false,
          ...(client ? { key: client.key, cert: client.cert } : {}),
        })
      : http.request(opts);
  out.on('response', (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  out.on('error', (e) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const s = new StatusError(
      503,
      'ServiceUnavailable',
      `error trying to reach service: ${e.message}`,
    ).toStatus();
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify(s));
  });
  req.pipe(out);
}

/** The client certificate the API server shows the kubelet (upstream --kubelet-client-certificate). @public */
export interface KubeletClientCertificate {
  readonly key: string | Buffer;
  readonly cert: string | Buffer;
}

/** Forwards an upgrade request: sends the rewritten request head, then pipes both sockets. @internal */
export function proxyUpgrade(
  req: http.IncomingMessage,
  socket: net.Socket,
  head: Buffer,
  target: KubeletTarget,
  scheme: 'http' | 'https',
  client?: KubeletClientCertificate,
): void {
  const upstream =
    scheme === 'https'
      ? tls.connect({
          host: target.host,
          port: target.port,
          rejectUnauthorized: false,
          ...(client ? { key: client.key, cert: client.cert } : {}),
          servername: net.isIP(target.host) ? undefined : target.host,
        })
      : net.connect({ host: target.host, port: target.port });
  const ready = scheme === 'https' ? 'secureConnect' : 'connect';
  upstream.once(ready, () => {
    const lines = [`${req.method} ${target.path} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i] ?? '';
      const v = req.rawHeaders[i + 1] ?? '';
      if (/^host$/i.test(k)) lines.push(`Host: ${target.host}:${target.port}`);
      else if (!/^authorization$/i.test(k)) lines.push(`${k}: ${v}`);
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  const fail = () => {
    socket.destroy();
    upstream.destroy();
  };
  upstream.on('error', () => {
    if (socket.writable && socket.bytesWritten === 0) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    } else fail();
  });
  socket.on('error', fail);
  socket.on('close', () => upstream.destroy());
  upstream.on('close', () => socket.destroy());
}
