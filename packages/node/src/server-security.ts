// How the agent secures its API (upstream BuildAuth and InitializeTLS): the choice between
// today's loopback HTTP and HTTPS with authentication, from the agent's options.

import net from 'node:net';
import { loadClientNode, subjectAccessReviewer, tokenReviewer } from '@kubelet-kit/apiserver';
import type { Clock, Logger, ReviewSubjectAccess, ReviewToken } from '@kubelet-kit/core';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeletAuth, type KubeletAuthorizationMode } from './server-auth.js';
import { type KubeletTlsOptions, type ServingTls, servingTls } from './server-tls.js';

/** Upstream's `authentication` settings (flags and KubeletConfiguration). @public */
export interface KubeletAuthenticationOptions {
  /** `--anonymous-auth`; default: on unless a client CA or the token webhook is configured. */
  readonly anonymous?: boolean;
  /** `--authentication-token-webhook`: bearer tokens through TokenReview (needs a kubeconfig). */
  readonly webhook?: boolean;
  /** `--authentication-token-webhook-cache-ttl`; default 2 min. */
  readonly webhookCacheTtlMs?: number;
}

/** Upstream's `authorization` settings. @public */
export interface KubeletAuthorizationOptions {
  /** `--authorization-mode`; default AlwaysAllow. Webhook needs a kubeconfig. */
  readonly mode?: KubeletAuthorizationMode;
  /** `--authorization-webhook-cache-authorized-ttl`; default 5 min. */
  readonly cacheAuthorizedTtlMs?: number;
  /** `--authorization-webhook-cache-unauthorized-ttl`; default 30 s. */
  readonly cacheUnauthorizedTtlMs?: number;
}

/** What the server is built with. @internal */
export interface ServerSecurity {
  readonly tls?: ServingTls;
  readonly auth?: KubeletAuth;
}

function isLoopback(address: string): boolean {
  if (address === 'localhost' || address === '::1') return true;
  return net.isIPv4(address) && address.startsWith('127.');
}

/**
 * HTTPS with the auth filter when any TLS or auth setting is given or the address is not
 * loopback; otherwise the loopback HTTP of a standalone agent, with no filter.
 *
 * @internal
 */
export function serverSecurity(o: {
  readonly address: string;
  readonly tls: KubeletTlsOptions;
  readonly authentication: KubeletAuthenticationOptions;
  readonly authorization: KubeletAuthorizationOptions;
  readonly kubeConfig: (() => Promise<KubeConfig>) | undefined;
  readonly nodeName: string;
  readonly ips: readonly string[];
  readonly clock: Clock;
  readonly logger: Logger;
}): ServerSecurity {
  const mode = o.authorization.mode ?? 'AlwaysAllow';
  if (mode !== 'AlwaysAllow' && mode !== 'Webhook')
    throw new Error(`--authorization-mode: unknown mode ${JSON.stringify(mode)} (AlwaysAllow or Webhook)`);
  const secured =
    !isLoopback(o.address) ||
    Boolean(o.tls.certFile || o.tls.privateKeyFile || o.tls.clientCAFile) ||
    o.authentication.webhook === true ||
    o.authentication.anonymous === false ||
    mode === 'Webhook';
  if (!secured) return {};
  const needsApi = (what: string) => {
    if (!o.kubeConfig) throw new Error(`${what} needs an API server: pass --kubeconfig`);
    return o.kubeConfig;
  };
  let reviewToken: ReviewToken | undefined;
  if (o.authentication.webhook) reviewToken = tokenReview(needsApi('--authentication-token-webhook'));
  let reviewSubjectAccess: ReviewSubjectAccess | undefined;
  if (mode === 'Webhook') reviewSubjectAccess = accessReview(needsApi('--authorization-mode=Webhook'));
  const x509 = Boolean(o.tls.clientCAFile);
  const auth = new KubeletAuth({
    nodeName: o.nodeName,
    x509,
    ...(reviewToken ? { reviewToken } : {}),
    ...(o.authentication.webhookCacheTtlMs !== undefined
      ? { tokenCacheTtlMs: o.authentication.webhookCacheTtlMs }
      : {}),
    // The rule: anonymous off once either authenticator is configured, unless asked for.
    anonymous: o.authentication.anonymous ?? !(x509 || reviewToken),
    authorizationMode: mode,
    ...(reviewSubjectAccess ? { reviewSubjectAccess } : {}),
    ...(o.authorization.cacheAuthorizedTtlMs !== undefined
      ? { authorizedTtlMs: o.authorization.cacheAuthorizedTtlMs }
      : {}),
    ...(o.authorization.cacheUnauthorizedTtlMs !== undefined
      ? { unauthorizedTtlMs: o.authorization.cacheUnauthorizedTtlMs }
      : {}),
    clock: o.clock,
    logger: o.logger,
  });
  const tls = servingTls(o.tls, { hostname: o.nodeName, ips: o.ips, nowMs: o.clock.now() });
  return { tls, auth };
}

function tokenReview(kubeConfig: () => Promise<KubeConfig>): ReviewToken {
  let reviewer: Promise<ReviewToken> | undefined;
  return async (...args) => {
    reviewer ??= Promise.all([kubeConfig(), loadClientNode()]).then(([kc, m]) =>
      tokenReviewer(kc.makeApiClient(m.AuthenticationV1Api)),
    );
    return (await reviewer)(...args);
  };
}

function accessReview(kubeConfig: () => Promise<KubeConfig>): ReviewSubjectAccess {
  let reviewer: Promise<ReviewSubjectAccess> | undefined;
  return async (...args) => {
    reviewer ??= Promise.all([kubeConfig(), loadClientNode()]).then(([kc, m]) =>
      subjectAccessReviewer(kc.makeApiClient(m.AuthorizationV1Api)),
    );
    return (await reviewer)(...args);
  };
}
