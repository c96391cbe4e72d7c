// The kubelet API's authentication and authorization (upstream `cmd/kubelet/app/auth.go`
// BuildAuth, `pkg/kubelet/server/auth.go` and the filter of `InstallAuthFilter`): who made a
// request (client certificate, bearer token through TokenReview, or anonymous), and whether
// they may do it (`nodes/<subresource>` of this node, AlwaysAllow or SubjectAccessReview).

import { createHash } from 'node:crypto';
import type http from 'node:http';
import type { TLSSocket } from 'node:tls';
import type {
  Clock,
  Logger,
  ResourceAttributes,
  ReviewSubjectAccess,
  ReviewToken,
  UserInfo,
} from '@kubelet-kit/core';

/** Upstream's authorization modes of the kubelet (`--authorization-mode`). @public */
export type KubeletAuthorizationMode = 'AlwaysAllow' | 'Webhook';

/** Options of {@link KubeletAuth}. @public */
export interface KubeletAuthOptions {
  /** The node the requests are checked against (`nodes/<name>`). */
  readonly nodeName: string;
  /**
   * Client certificates are verified by the TLS server against `--client-ca-file`; with this
   * set, a verified certificate names the user (CN) and groups (O).
   */
  readonly x509?: boolean;
  /** Bearer tokens through TokenReview (`--authentication-token-webhook`). */
  readonly reviewToken?: ReviewToken;
  /** How long a TokenReview answer is reused (`--authentication-token-webhook-cache-ttl`); default 2 min. */
  readonly tokenCacheTtlMs?: number;
  /** Requests with no credentials pass as `system:anonymous` (`--anonymous-auth`). */
  readonly anonymous: boolean;
  readonly authorizationMode: KubeletAuthorizationMode;
  /** SubjectAccessReview, for the Webhook mode. */
  readonly reviewSubjectAccess?: ReviewSubjectAccess;
  /** `--authorization-webhook-cache-authorized-ttl`; default 5 min. */
  readonly authorizedTtlMs?: number;
  /** `--authorization-webhook-cache-unauthorized-ttl`; default 30 s. */
  readonly unauthorizedTtlMs?: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * The filter's answer for one request: allowed with its user, or the status and text to send.
 *
 * @public
 */
export type AuthDecision =
  | { readonly allowed: true; readonly user: UserInfo }
  | { readonly allowed: false; readonly status: 401 | 403 | 500; readonly message: string };

const anonymousUser: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
const cacheLimit = 4096;

/** Upstream's `isSubpath`: the path itself or something under it. */
function isSubpath(path: string, base: string): boolean {
  const b = base.endsWith('/') ? base.slice(0, -1) : base;
  return path === b || (path.startsWith(b) && path[b.length] === '/');
}

/** The API verb of an HTTP method, as upstream maps it (others, HEAD too, give ''). @internal */
export function apiVerbOf(method: string | undefined): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'GET':
      return 'get';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return '';
  }
}

/**
 * The subresources of `nodes` a path is checked against, in order: the first one allowed
 * admits the request (upstream's node attributes getter with KubeletFineGrainedAuthz on, its
 * v1.34 default: `/pods` as `nodes/pods` falling back to `nodes/proxy`, and so on).
 *
 * @internal
 */
export function subresourcesOf(path: string): readonly string[] {
  if (isSubpath(path, '/stats/')) return ['stats'];
  if (isSubpath(path, '/metrics')) return ['metrics'];
  if (isSubpath(path, '/logs/')) return ['log'];
  if (isSubpath(path, '/checkpoint/')) return ['checkpoint'];
  if (isSubpath(path, '/pods') || isSubpath(path, '/runningpods/')) return ['pods', 'proxy'];
  if (isSubpath(path, '/healthz')) return ['healthz', 'proxy'];
  if (isSubpath(path, '/configz')) return ['configz', 'proxy'];
  return ['proxy'];
}

/** The attributes checked for a request, one per subresource. @internal */
export function requestAttributes(
  nodeName: string,
  method: string | undefined,
  path: string,
): ResourceAttributes[] {
  const verb = apiVerbOf(method);
  return subresourcesOf(path).map((subresource) => ({
    verb,
    namespace: '',
    group: '',
    version: 'v1',
    resource: 'nodes',
    subresource,
    name: nodeName,
  }));
}

interface Cached<T> {
  readonly value: T;
  readonly expires: number;
}

/** A map whose entries expire on the injected clock, bounded so a flood of tokens cannot grow it. */
class ExpiringCache<T> {
  readonly #entries = new Map<string, Cached<T>>();
  constructor(readonly clock: Clock) {}
  get(key: string): T | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expires <= this.clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: T, ttlMs: number): void {
    if (ttlMs <= 0) return;
    if (this.#entries.size >= cacheLimit) {
      const now = this.clock.now();
      for (const [k, e] of this.#entries) if (e.expires <= now) this.#entries.delete(k);
      // Still full: drop the oldest insertions.
      for (const k of this.#entries.keys()) {
        if (this.#entries.size < cacheLimit) break;
        this.#entries.delete(k);
      }
    }
    this.#entries.set(key, { value, expires: this.clock.now() + ttlMs });
  }
}

type Authn = { user: UserInfo } | { error: string } | undefined;

/**
 * Authenticates and authorizes requests to the kubelet API (the filter in front of every
 * handler, upgrades included).
 *
 * @public
 */
export class KubeletAuth {
  readonly #o: KubeletAuthOptions;
  readonly #tokens: ExpiringCache<Authn>;
  readonly #decisions: ExpiringCache<boolean>;

  constructor(options: KubeletAuthOptions) {
    if (options.authorizationMode === 'Webhook' && !options.reviewSubjectAccess)
      throw new Error('authorization mode Webhook needs an API server (SubjectAccessReview)');
    this.#o = options;
    this.#tokens = new ExpiringCache(options.clock);
    this.#decisions = new ExpiringCache(options.clock);
  }

  /**
   * Who made the request: a verified client certificate, then a bearer token; with neither,
   * anonymous when allowed. Bad credentials fail even when anonymous is allowed, as upstream's
   * fail-on-error union does.
   */
  async authenticate(req: http.IncomingMessage): Promise<{ user: UserInfo } | { error: string }> {
    const errors: string[] = [];
    for (const step of [() => this.#x509(req), () => this.#bearer(req)]) {
      const r = await step();
      if (r === undefined) continue;
      if ('user' in r) return { user: withAuthenticatedGroup(r.user) };
      errors.push(r.error);
    }
    if (errors.length > 0) return { error: errors.join('; ') };
    if (this.#o.anonymous) return { user: anonymousUser };
    return { error: 'no credentials' };
  }

  /** Whether the user may make the request (each subresource in turn, the first allowed wins). */
  async authorize(user: UserInfo, method: string | undefined, path: string): Promise<AuthDecision> {
    const attrs = requestAttributes(this.#o.nodeName, method, path);
    const subresources: string[] = [];
    const first = attrs[0] as ResourceAttributes;
    for (const a of attrs) {
      subresources.push(a.subresource);
      let allowed: boolean;
      try {
        allowed = await this.#allowed(user, a);
      } catch (err) {
        this.#o.logger.error(
          { err: String(err), user: user.name, verb: a.verb, subresource: a.subresource },
          'authorization error',
        );
        return {
          allowed: false,
          status: 500,
          message: `Authorization error (user=${user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${subresources.join(' ')}])`,
        };
      }
      if (allowed) return { allowed: true, user };
    }
    return {
      allowed: false,
      status: 403,
      message: `Forbidden (user=${user.name}, verb=${first.verb}, resource=${first.resource}, subresource(s)=[${subresources.join(' ')}])\n`,
    };
  }

  /** The whole filter: authentication (401), then authorization (403). */
  async authorizeRequest(req: http.IncomingMessage): Promise<AuthDecision> {
    const authn = await this.authenticate(req);
    if ('error' in authn) {
      this.#o.logger.debug({ url: req.url, reason: authn.error }, 'unable to authenticate the request');
      return { allowed: false, status: 401, message: 'Unauthorized' };
    }
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    return this.authorize(authn.user, req.method, path);
  }

  #x509(req: http.IncomingMessage): Authn {
    if (!this.#o.x509) return undefined;
    const socket = req.socket as Partial<TLSSocket>;
    if (typeof socket.getPeerCertificate !== 'function') return undefined;
    const cert = socket.getPeerCertificate();
    if (!cert || Object.keys(cert).length === 0) return undefined;
    if (!socket.authorized) {
      return {
        error: `verifying certificate failed: ${String(socket.authorizationError ?? 'unknown authority')}`,
      };
    }
    const cn = cert.subject?.CN;
    const name = Array.isArray(cn) ? (cn[0] ?? '') : (cn ?? '');
    if (name === '') return { error: 'client certificate has no common name' };
    const o = cert.subject?.O;
    const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
    return { user: { name, groups } };
  }

  async #bearer(req: http.IncomingMessage): Promise<Authn> {
    if (!this.#o.reviewToken) return undefined;
    const header = req.headers.authorization ?? '';
    const m = /^bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) return undefined;
    const token = m[1] as string;
    // The cache holds a hash, not the token.
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.#tokens.get(key);
    if (cached) return cached;
    let result: Authn;
    try {
      const r = await this.#o.reviewToken(token, []);
      result = r.authenticated
        ? { user: r.user }
        : { error: `invalid bearer token${r.error ? `: ${r.error}` : ''}` };
    } catch (err) {
      // Not cached: the next request asks again.
      return { error: `token review failed: ${String(err)}` };
    }
    this.#tokens.set(key, result, this.#o.tokenCacheTtlMs ?? 120_000);
    return result;
  }

  async #allowed(user: UserInfo, a: ResourceAttributes): Promise<boolean> {
    if (this.#o.authorizationMode === 'AlwaysAllow') return true;
    const review = this.#o.reviewSubjectAccess as ReviewSubjectAccess;
    const key = JSON.stringify([user.name, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, a]);
    const cached = this.#decisions.get(key);
    if (cached !== undefined) return cached;
    const r = await review(user, a);
    const allowed = r.allowed && !r.denied;
    this.#decisions.set(
      key,
      allowed,
      allowed ? (this.#o.authorizedTtlMs ?? 300_000) : (this.#o.unauthorizedTtlMs ?? 30_000),
    );
    return allowed;
  }
}

/** Upstream's AuthenticatedGroupAdder: every authenticated user is in `system:authenticated`. */
function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (user.groups.includes('system:authenticated') || user.name === 'system:anonymous') return user;
  return { ...user, groups: [...user.groups, 'system:authenticated'] };
}
