// The contracts between the kubelet's API server filter and the API server's review APIs:
// TokenReview (authentication.k8s.io/v1) for bearer tokens and SubjectAccessReview
// (authorization.k8s.io/v1) for the kubelet's `nodes/<subresource>` checks (upstream
// `cmd/kubelet/app/auth.go`, the webhook authenticator and authorizer).

/**
 * Who made a request (upstream `user.Info`).
 *
 * @public
 */
export interface UserInfo {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/**
 * What a TokenReview answered: the user when the token is valid, else the reason.
 *
 * @public
 */
export type TokenReviewResult =
  | { readonly authenticated: true; readonly user: UserInfo; readonly audiences?: readonly string[] }
  | { readonly authenticated: false; readonly error?: string };

/**
 * Asks the API server whether a bearer token is valid (one TokenReview create, no cache).
 * Throws when the API server cannot be asked.
 *
 * @public
 */
export type ReviewToken = (
  token: string,
  audiences: readonly string[],
  signal?: AbortSignal,
) => Promise<TokenReviewResult>;

/**
 * The resource attributes of one authorization check (upstream `authorizer.Attributes` for a
 * resource request; the kubelet always asks about `nodes/<subresource>` of its own node).
 *
 * @public
 */
export interface ResourceAttributes {
  readonly verb: string;
  readonly namespace: string;
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly subresource: string;
  readonly name: string;
}

/**
 * What a SubjectAccessReview answered (`status.allowed`, `status.denied`, `status.reason`).
 *
 * @public
 */
export interface SubjectAccessReviewResult {
  readonly allowed: boolean;
  /** An explicit denial: no other authorizer may allow it. */
  readonly denied?: boolean;
  readonly reason?: string;
  readonly evaluationError?: string;
}

/**
 * Asks the API server whether a user may do something (one SubjectAccessReview create, no
 * cache). Throws when the API server cannot be asked.
 *
 * @public
 */
export type ReviewSubjectAccess = (
  user: UserInfo,
  attributes: ResourceAttributes,
  signal?: AbortSignal,
) => Promise<SubjectAccessReviewResult>;
