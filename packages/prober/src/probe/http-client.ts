import { createRequire } from 'node:module';
import net, { type Socket } from 'node:net';
import type * as Tls from 'node:tls';

// node:tls is required on the first HTTPS probe, not imported: Node builds an ES import's
// namespace by reading every export, and reading `tls.rootCertificates` parses the bundled CA
// store, which a probe (no certificate checks) never uses.
let tlsModule: typeof Tls | undefined;
const loadTls = (): typeof Tls => {
  tlsModule ??= createRequire(import.meta.url)('node:tls') as typeof Tls;
  return tlsModule;
};

/**
 * A minimal HTTP/1.1 GET client for probes: one fresh connection per request (`Connection:
 * close`, as the kubelet's probe transport disables keep-alive), no certificate checks, and only
 * as much of the response as a probe needs. It replaces `node:http`, whose per-request machinery
 * (agents, parser objects, streams) cost more CPU than the probes themselves at a thousand a second.
 */

/** The part of a response a probe looks at. */
export interface ProbeHttpResponse {
  readonly statusCode: number;
  /** The first Location header, if any. */
  readonly location: string | undefined;
  /** At most `bodyLimit` bytes of the body, decoded as UTF-8 ('' when the body was skipped). */
  readonly body: string;
}

/** Where a request failed: before the whole header arrived, or while the body was read. */
export class ProbeHttpError extends Error {
  readonly phase: 'headers' | 'body';
  constructor(message: string, phase: 'headers' | 'body', options?: ErrorOptions) {
    super(message, options);
    this.name = 'ProbeHttpError';
    this.phase = phase;
  }
}

/** One GET request, its bytes ready to send. */
export interface ProbeHttpTarget {
  readonly secure: boolean;
  /** Host name or IP to connect to (no brackets). */
  readonly host: string;
  readonly port: number;
  readonly bytes: Buffer;
}

/** Go's client rejects response headers larger than this (`MaxResponseHeaderBytes`' default). */
const maxHeaderBytes = 1 << 20;
/** Go's client skips at most this many 1xx responses before giving up. */
const max1xxResponses = 5;

const tokenRe = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const badValueRe = /[\0\r\n]/;

/**
 * The request bytes of a GET of `url` with `headers` in order. The Host header is the URL's
 * unless overridden (the first `Host` given wins, as in Go, and an empty one is no override);
 * only the first User-Agent is sent, none if it is empty. Throws an Error with Go's message
 * for an invalid header name or value.
 */
export function buildProbeHttpTarget(
  url: URL,
  headers: ReadonlyArray<readonly [string, string]>,
): ProbeHttpTarget {
  let host: string | undefined;
  let userAgentSeen = false;
  let lines = '';
  for (const [name, value] of headers) {
    if (!tokenRe.test(name)) throw new Error(`net/http: invalid header field name ${JSON.stringify(name)}`);
    if (badValueRe.test(value))
      throw new Error(`net/http: invalid header field value for ${JSON.stringify(name)}`);
    if (name.length === 4 && name.toLowerCase() === 'host') {
      host ??= value;
      continue;
    }
    if (name.length === 10 && name.toLowerCase() === 'user-agent') {
      // As Go's request writer: only the first User-Agent is sent, and none when it is empty.
      if (userAgentSeen) continue;
      userAgentSeen = true;
      if (value === '') continue;
    }
    lines += `${name}: ${value}\r\n`;
  }
  // An empty Host override leaves Go's req.Host empty: the URL's host is sent.
  const text = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${host || url.host}\r\n${lines}Connection: close\r\n\r\n`;
  const secure = url.protocol === 'https:';
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return {
    secure,
    host: hostname,
    port: url.port ? Number(url.port) : secure ? 443 : 80,
    bytes: Buffer.from(text, 'latin1'),
  };
}

/** Options of {@link probeHttpGet}. */
export interface ProbeHttpGetOptions {
  readonly bodyLimit: number;
  /** Whether to read the body of a response (default: always). */
  readonly wantsBody?: (statusCode: number, location: string | undefined) => boolean;
  /**
   * Scratch space that plain-HTTP reads land in before they are parsed (one per caller; it is
   * only used synchronously, so concurrent requests can share it). Default: a buffer per read.
   */
  readonly readBuffer?: Buffer;
}

/** A request in flight; {@link ProbeHttpExchange.cut} ends it with an error. */
export interface ProbeHttpExchange {
  readonly response: Promise<ProbeHttpResponse>;
  cut(reason: Error): void;
}

/** Where the parser is in the response. */
const State = {
  Headers: 0,
  Length: 1,
  ChunkSize: 2,
  ChunkData: 3,
  ChunkEnd: 4,
  UntilClose: 5,
  Done: 6,
} as const;
type State = (typeof State)[keyof typeof State];

/**
 * Sends one GET over a new connection and reads the response: status line and headers, then
 * the body (Content-Length, chunked, or until the server closes) up to `bodyLimit` bytes, after
 * which the connection is dropped: a longer body is truncated, not an error.
 */
export function probeHttpGet(target: ProbeHttpTarget, options: ProbeHttpGetOptions): ProbeHttpExchange {
  return new ProbeRequest(target, options);
}

class ProbeRequest implements ProbeHttpExchange {
  readonly response: Promise<ProbeHttpResponse>;
  readonly #socket: Socket;
  readonly #secure: boolean;
  readonly #options: ProbeHttpGetOptions;
  #resolve!: (r: ProbeHttpResponse) => void;
  #reject!: (e: Error) => void;
  #settled = false;
  #state: State = State.Headers;
  /** Bytes received but not parsed yet (a partial header or chunk-size line). */
  #pending: Buffer | undefined;
  #headerBytes = 0;
  #informational = 0;
  #statusCode = 0;
  #location: string | undefined;
  /** Body bytes still expected in the current Content-Length body or chunk. */
  #remaining = 0;
  #body: Buffer[] = [];
  #bodyLength = 0;

  constructor(target: ProbeHttpTarget, options: ProbeHttpGetOptions) {
    this.#options = options;
    this.#secure = target.secure;
    this.response = new Promise<ProbeHttpResponse>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    let socket: Socket;
    if (target.secure) {
      socket = loadTls().connect({
        host: target.host,
        port: target.port,
        rejectUnauthorized: false,
        // SNI takes host names only.
        ...(net.isIP(target.host) ? {} : { servername: target.host }),
      });
      socket.on('data', (chunk: Buffer) => this.#onData(chunk, chunk.length));
      // A TLS socket can close without an 'end' (no close_notify).
      socket.on('close', () => this.#onEnd());
    } else if (options.readBuffer) {
      const buffer = options.readBuffer;
      socket = net.connect({
        host: target.host,
        port: target.port,
        onread: {
          buffer,
          callback: (n) => {
            this.#onData(buffer, n);
            return true;
          },
        },
      });
    } else {
      socket = net.connect({ host: target.host, port: target.port });
      socket.on('data', (chunk: Buffer) => this.#onData(chunk, chunk.length));
    }
    this.#socket = socket;
    socket.on('error', (err: Error) => this.#fail(err.message, err));
    socket.on('end', () => this.#onEnd());
    socket.write(target.bytes);
  }

  cut(reason: Error): void {
    this.#fail(reason.message, reason);
  }

  #fail(message: string, cause?: Error): void {
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(
        new ProbeHttpError(
          message,
          this.#state === State.Headers ? 'headers' : 'body',
          cause ? { cause } : undefined,
        ),
      );
    }
    this.#socket.destroy();
  }

  #onEnd(): void {
    if (this.#settled) return;
    if (this.#state === State.UntilClose) this.#finish();
    else if (this.#state === State.Headers)
      this.#fail(this.#headerBytes === 0 && !this.#pending ? 'EOF' : 'unexpected EOF');
    else this.#fail('unexpected EOF');
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#state = State.Done;
    const chunks = this.#body;
    const limit = this.#options.bodyLimit;
    const body =
      chunks.length === 0
        ? ''
        : (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString(
            'utf8',
            0,
            Math.min(limit, this.#bodyLength),
          );
    this.#resolve({ statusCode: this.#statusCode, location: this.#location, body });
    this.#drop();
  }

  /**
   * Drops the connection with a reset rather than a FIN: it has nothing left to say, and a
   * reset leaves no TIME_WAIT socket behind, which at a thousand probes a second would exhaust
   * the ephemeral ports (upstream sets a 1 s SO_LINGER for the same reason). TLS sockets cannot
   * be reset from Node: they close normally.
   */
  #drop(): void {
    const socket = this.#socket;
    if (!this.#secure && !socket.destroyed && !socket.connecting && !socket.writableEnded) {
      socket.resetAndDestroy();
    } else {
      socket.destroy();
    }
  }

  /** Consumes `n` bytes of `buf` (which may be scratch space reused after this call). */
  #onData(buf: Buffer, n: number): void {
    if (this.#settled) return;
    let data = buf;
    let start = 0;
    let end = n;
    if (this.#pending) {
      data = Buffer.concat([this.#pending, buf.subarray(0, n)]);
      this.#pending = undefined;
      end = data.length;
    }
    try {
      while (start < end && !this.#settled) {
        switch (this.#state) {
          case State.Headers: {
            const at = data.indexOf('\r\n\r\n', start, 'latin1');
            if (at < 0 || at >= end) {
              if (this.#headerBytes + end - start > maxHeaderBytes)
                throw new ProbeHttpError(
                  `net/http: server response headers exceeded ${maxHeaderBytes} bytes; aborted`,
                  'headers',
                );
              this.#keep(data, start, end);
              return;
            }
            this.#headerBytes += at + 4 - start;
            this.#parseHead(data.toString('latin1', start, at));
            start = at + 4;
            break;
          }
          case State.Length:
          case State.ChunkData: {
            const take = Math.min(this.#remaining, end - start);
            if (this.#addBody(data, start, start + take)) return;
            start += take;
            this.#remaining -= take;
            if (this.#remaining === 0) {
              if (this.#state === State.Length) {
                this.#finish();
                return;
              }
              this.#state = State.ChunkEnd;
            }
            break;
          }
          case State.ChunkEnd:
          case State.ChunkSize: {
            const at = data.indexOf('\r\n', start, 'latin1');
            if (at < 0 || at >= end) {
              if (end - start > 4096) throw new ProbeHttpError('malformed chunked encoding', 'body');
              this.#keep(data, start, end);
              return;
            }
            const line = data.toString('latin1', start, at);
            start = at + 2;
            if (this.#state === State.ChunkEnd) {
              if (line !== '') throw new ProbeHttpError('malformed chunked encoding', 'body');
              this.#state = State.ChunkSize;
              break;
            }
            const size = /^([0-9a-fA-F]{1,15})[ \t]*(;.*)?$/.exec(line);
            if (!size) throw new ProbeHttpError('malformed chunked encoding', 'body');
            this.#remaining = Number.parseInt(size[1]!, 16);
            // The last chunk: trailers, if any, are of no interest.
            if (this.#remaining === 0) {
              this.#finish();
              return;
            }
            this.#state = State.ChunkData;
            break;
          }
          case State.UntilClose: {
            if (this.#addBody(data, start, end)) return;
            start = end;
            break;
          }
          default:
            return;
        }
      }
    } catch (err) {
      const e = err as ProbeHttpError;
      this.#state = e.phase === 'headers' ? State.Headers : State.Done;
      this.#fail(e.message, e);
    }
  }

  #keep(data: Buffer, start: number, end: number): void {
    // A copy: `data` may be the shared read buffer.
    this.#pending = Buffer.from(data.subarray(start, end));
  }

  /** Keeps body bytes up to the limit; true when the limit is reached and the request finished. */
  #addBody(data: Buffer, start: number, end: number): boolean {
    const limit = this.#options.bodyLimit;
    const take = Math.min(end - start, limit - this.#bodyLength);
    if (take > 0) {
      this.#body.push(Buffer.from(data.subarray(start, start + take)));
      this.#bodyLength += take;
    }
    if (this.#bodyLength >= limit) {
      this.#finish();
      return true;
    }
    return false;
  }

  #parseHead(head: string): void {
    const lines = head.split('\r\n');
    const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]!);
    if (!status) throw new ProbeHttpError(`malformed HTTP response ${JSON.stringify(lines[0])}`, 'headers');
    const code = Number(status[1]);
    let location: string | undefined;
    let contentLength: number | undefined;
    let chunked = false;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new ProbeHttpError(`malformed MIME header line: ${line}`, 'headers');
      const name = line.slice(0, colon).toLowerCase();
      if (name === 'location') location ??= line.slice(colon + 1).trim();
      else if (name === 'content-length') {
        const value = line.slice(colon + 1).trim();
        const parsed = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
        if (Number.isNaN(parsed) || (contentLength !== undefined && contentLength !== parsed))
          throw new ProbeHttpError(`bad Content-Length ${JSON.stringify(value)}`, 'headers');
        contentLength = parsed;
      } else if (name === 'transfer-encoding') {
        chunked =
          line
            .slice(colon + 1)
            .trim()
            .toLowerCase() === 'chunked';
      }
    }
    if (code >= 100 && code < 200 && code !== 101) {
      // Informational: the real response follows.
      if (++this.#informational > max1xxResponses)
        throw new ProbeHttpError('net/http: too many 1xx informational responses', 'headers');
      return;
    }
    this.#statusCode = code;
    this.#location = location;
    const wantsBody = this.#options.wantsBody?.(code, location) ?? true;
    if (!wantsBody || code === 204 || code === 304 || code === 101) {
      this.#finish();
      return;
    }
    if (chunked) this.#state = State.ChunkSize;
    else if (contentLength !== undefined) {
      this.#remaining = contentLength;
      this.#state = State.Length;
      if (contentLength === 0) this.#finish();
    } else this.#state = State.UntilClose;
  }
}
