// The review calls of the kubelet's API filter: POST
// `/apis/authentication.k8s.io/v1/tokenreviews` for bearer tokens and
// `/apis/authorization.k8s.io/v1/subjectaccessreviews` for each `nodes/<subresource>` check
// (upstream's webhook token authenticator and webhook authorizer, which the kubelet builds over
// its own client in `cmd/kubelet/app/auth.go`).

import type { ReviewSubjectAccess, ReviewToken, UserInfo } from '@kubelet-kit/core';
// Types only: the client is loaded by whoever builds the API objects.
import type {
  AuthenticationV1Api,
  AuthorizationV1Api,
  V1SubjectAccessReview,
  V1TokenReview,
} from '@kubernetes/client-node';
import { asError, httpStatusOf } from './api-errors.js';

/**
 * The part of client-node's `AuthenticationV1Api` a token review needs.
 *
 * @public
 */
export type TokenReviewApi = Pick<AuthenticationV1Api, 'createTokenReview'>;

/**
 * The part of client-node's `AuthorizationV1Api` an access review needs.
 *
 * @public
 */
export type SubjectAccessReviewApi = Pick<AuthorizationV1Api, 'createSubjectAccessReview'>;

/**
 * A review the API server could not answer; `status` is the HTTP status when there was one.
 *
 * @public
 */
export class AuthReviewError extends Error {
  readonly code = 'AuthReviewFailed';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AuthReviewError';
  }
}

function lazy<T>(api: T | (() => Promise<T>)): () => Promise<T> {
  return typeof api === 'function' ? (api as () => Promise<T>) : async () => api;
}

function failure(what: string, err: unknown): AuthReviewError {
  const status = httpStatusOf(err);
  return new AuthReviewError(
    `${what} failed${status ? ` with ${status}` : ''}: ${asError(err).message}`,
    status,
    { cause: err },
  );
}

/**
 * TokenReview over a client (e.g. `kubeConfig.makeApiClient(AuthenticationV1Api)`), or a
 * function that loads one on first use.
 *
 * @public
 */
export function tokenReviewer(api: TokenReviewApi | (() => Promise<TokenReviewApi>)): ReviewToken {
  const client = lazy(api);
  return async (token, audiences, signal) => {
    signal?.throwIfAborted();
    const body: V1TokenReview = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, ...(audiences.length ? { audiences: [...audiences] } : {}) },
    };
    let answer: V1TokenReview;
    try {
      answer = await (await client()).createTokenReview({ body });
    } catch (err) {
      throw failure('token review', err);
    }
    signal?.throwIfAborted();
    const status = answer.status;
    if (!status?.authenticated) {
      return { authenticated: false, ...(status?.error ? { error: status.error } : {}) };
    }
    const u = status.user ?? {};
    const user: UserInfo = {
      name: u.username ?? '',
      groups: u.groups ?? [],
      ...(u.uid ? { uid: u.uid } : {}),
      ...(u.extra ? { extra: u.extra } : {}),
    };
    return { authenticated: true, user, ...(status.audiences ? { audiences: status.audiences } : {}) };
  };
}

/**
 * SubjectAccessReview over a client (e.g. `kubeConfig.makeApiClient(AuthorizationV1Api)`), or
 * a function that loads one on first use.
 *
 * @public
 */
export function subjectAccessReviewer(
  api: SubjectAccessReviewApi | (() => Promise<SubjectAccessReviewApi>),
): ReviewSubjectAccess {
  const client = lazy(api);
  return async (user, attributes, signal) => {
    signal?.throwIfAborted();
    const body: V1SubjectAccessReview = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.name,
        groups: [...user.groups],
        ...(user.uid ? { uid: user.uid } : {}),
        ...(user.extra
          ? { extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])) }
          : {}),
        resourceAttributes: { ...attributes },
      },
    };
    let answer: V1SubjectAccessReview;
    try {
      answer = await (await client()).createSubjectAccessReview({ body });
    } catch (err) {
      throw failure('subject access review', err);
    }
    signal?.throwIfAborted();
    const s = answer.status;
    return {
      allowed: s?.allowed === true,
      ...(s?.denied ? { denied: true } : {}),
      ...(s?.reason ? { reason: s.reason } : {}),
      ...(s?.evaluationError ? { evaluationError: s.evaluationError } : {}),
    };
  };
}
