// The TokenRequest call of the token manager: POST
// `/api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (upstream's
// `ServiceAccounts(ns).CreateToken` in pkg/kubelet/token), answered 201 with the issued token.

import type { TokenRequest, TokenRequestSpec } from '@kubelet-kit/core';
// Types only: the client is loaded by whoever builds the API object.
import type { AuthenticationV1TokenRequest, CoreV1Api } from '@kubernetes/client-node';
import { asError, httpStatusOf } from './api-errors.js';

/**
 * The part of client-node's `CoreV1Api` a token request needs.
 *
 * @public
 */
export type ServiceAccountTokenApi = Pick<CoreV1Api, 'createNamespacedServiceAccountToken'>;

/**
 * Asks the API server for a token (one POST, no cache): what {@link TokenManager} calls.
 *
 * @public
 */
export type RequestServiceAccountToken = (
  namespace: string,
  name: string,
  spec: TokenRequestSpec,
  signal?: AbortSignal,
) => Promise<TokenRequest>;

/**
 * A token request the API server refused or answered with no usable token; `status` is the
 * HTTP status when there was one.
 *
 * @public
 */
export class TokenRequestError extends Error {
  readonly code = 'TokenRequestFailed';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TokenRequestError';
  }
}

function toIso(value: unknown): string | undefined {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  return date && !Number.isNaN(date.getTime()) ? date.toISOString() : undefined;
}

/**
 * The TokenRequest call over a client (e.g. `kubeConfig.makeApiClient(CoreV1Api)`), or a
 * function that loads one on first use.
 *
 * @public
 */
export function serviceAccountTokenRequester(
  api: ServiceAccountTokenApi | (() => Promise<ServiceAccountTokenApi>),
): RequestServiceAccountToken {
  const client = typeof api === 'function' ? api : async () => api;
  return async (namespace, name, spec, signal) => {
    signal?.throwIfAborted();
    const what = `serviceaccounts "${name}" in namespace "${namespace}"`;
    const body: AuthenticationV1TokenRequest = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: [...spec.audiences],
        expirationSeconds: spec.expirationSeconds,
        boundObjectRef: { ...spec.boundObjectRef },
      },
    };
    let answer: AuthenticationV1TokenRequest;
    try {
      answer = await (await client()).createNamespacedServiceAccountToken({ namespace, name, body });
    } catch (err) {
      const status = httpStatusOf(err);
      // Upstream asks discovery whether the subresource exists; a 404 names both causes instead.
      const hint =
        status === 404 ? ' (no such service account, or the API server serves no TokenRequest)' : '';
      throw new TokenRequestError(
        `token request for ${what} failed${status ? ` with ${status}` : ''}${hint}: ${asError(err).message}`,
        status,
        { cause: err },
      );
    }
    signal?.throwIfAborted();
    const token = answer.status?.token;
    const expirationTimestamp = toIso(answer.status?.expirationTimestamp);
    if (!token) throw new TokenRequestError(`token request for ${what}: the answer has no status.token`);
    if (!expirationTimestamp) {
      throw new TokenRequestError(
        `token request for ${what}: the answer has no valid status.expirationTimestamp`,
      );
    }
    return {
      // The server may have shortened the lifetime; its spec says what was issued.
      spec: {
        ...spec,
        expirationSeconds: answer.spec?.expirationSeconds ?? spec.expirationSeconds,
      },
      status: { token, expirationTimestamp },
    };
  };
}
