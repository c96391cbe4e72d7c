// TokenReview (authentication.k8s.io/v1) and SubjectAccessReview (authorization.k8s.io/v1):
// create-only review resources, answered by the test's hooks instead of an authenticator and
// an authorizer chain. Upstream stores nothing for them either: the answer is the status.

/** The user a TokenReview hook names. @public */
export interface FakeReviewUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/**
 * Decides a TokenReview: the user when the token is valid, undefined (or an error text) when not.
 *
 * @public
 */
export type FakeTokenReviewHook = (
  token: string,
  audiences: readonly string[],
) => FakeReviewUser | { readonly error: string } | undefined;

/** What a SubjectAccessReview asks (its spec, as sent). @public */
export interface FakeAccessReviewRequest {
  readonly user: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
  readonly resourceAttributes?: {
    readonly namespace?: string;
    readonly verb?: string;
    readonly group?: string;
    readonly version?: string;
    readonly resource?: string;
    readonly subresource?: string;
    readonly name?: string;
  };
  readonly nonResourceAttributes?: { readonly path?: string; readonly verb?: string };
}

/** Decides a SubjectAccessReview. @public */
export type FakeAccessReviewHook = (
  request: FakeAccessReviewRequest,
) => boolean | { readonly allowed: boolean; readonly denied?: boolean; readonly reason?: string };

/** The review resources for discovery. @internal */
export const REVIEW_RESOURCES = [
  { group: 'authentication.k8s.io', version: 'v1', name: 'tokenreviews', kind: 'TokenReview' },
  { group: 'authorization.k8s.io', version: 'v1', name: 'subjectaccessreviews', kind: 'SubjectAccessReview' },
] as const;

// biome-ignore lint/suspicious/noExplicitAny: reviews read loosely typed JSON
type Obj = Record<string, any>;

/** A 400 for a review without its required spec fields. @internal */
export class ReviewInvalid extends Error {}

/** The answer to a TokenReview create. @internal */
export function answerTokenReview(body: unknown, hook: FakeTokenReviewHook | undefined): Obj {
  const b = (body ?? {}) as Obj;
  const token = b.spec?.token;
  if (typeof token !== 'string' || token === '') throw new ReviewInvalid('spec.token: Required value');
  const audiences: string[] = Array.isArray(b.spec?.audiences) ? b.spec.audiences : [];
  const verdict = hook?.(token, audiences);
  const status: Obj =
    verdict === undefined
      ? { authenticated: false, error: 'invalid bearer token' }
      : 'error' in verdict
        ? { authenticated: false, error: verdict.error }
        : {
            authenticated: true,
            user: {
              username: verdict.username,
              ...(verdict.uid ? { uid: verdict.uid } : {}),
              groups: [...(verdict.groups ?? [])],
              ...(verdict.extra ? { extra: verdict.extra } : {}),
            },
            ...(audiences.length ? { audiences } : {}),
          };
  return {
    kind: 'TokenReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: b.spec,
    status,
  };
}

/** The answer to a SubjectAccessReview create. @internal */
export function answerAccessReview(body: unknown, hook: FakeAccessReviewHook | undefined): Obj {
  const b = (body ?? {}) as Obj;
  const spec = (b.spec ?? {}) as Obj;
  if (!spec.resourceAttributes && !spec.nonResourceAttributes)
    throw new ReviewInvalid(
      'spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified',
    );
  if (!spec.user && !(Array.isArray(spec.groups) && spec.groups.length))
    throw new ReviewInvalid('spec.user: Invalid value: at least one of user or group must be specified');
  const request: FakeAccessReviewRequest = {
    user: String(spec.user ?? ''),
    groups: Array.isArray(spec.groups) ? spec.groups : [],
    ...(spec.uid ? { uid: spec.uid } : {}),
    ...(spec.extra ? { extra: spec.extra } : {}),
    ...(spec.resourceAttributes ? { resourceAttributes: spec.resourceAttributes } : {}),
    ...(spec.nonResourceAttributes ? { nonResourceAttributes: spec.nonResourceAttributes } : {}),
  };
  // Without a hook everything is allowed, as a cluster whose authorizer is AlwaysAllow.
  const verdict = hook ? hook(request) : true;
  const v = typeof verdict === 'boolean' ? { allowed: verdict } : verdict;
  return {
    kind: 'SubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec,
    status: {
      allowed: v.allowed,
      ...(v.denied ? { denied: true } : {}),
      ...(v.reason ? { reason: v.reason } : {}),
    },
  };
}
