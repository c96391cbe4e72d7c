// The TokenRequest contract between the volume manager (projected serviceAccountToken sources)
// and whatever mints service account tokens (upstream `pkg/kubelet/token`, over the API
// server's `serviceaccounts/<name>/token` subresource, authentication.k8s.io/v1 TokenRequest).

/**
 * The object a token is bound to: the pod, so the token dies with it (upstream
 * `BoundObjectReference`; the kubelet only binds to pods).
 *
 * @public
 */
export interface BoundObjectReference {
  readonly kind: 'Pod';
  readonly apiVersion: 'v1';
  readonly name: string;
  readonly uid: string;
}

/**
 * What a token is asked for (`TokenRequestSpec`).
 *
 * @public
 */
export interface TokenRequestSpec {
  /** Who the token is for; empty means the API server's own audiences (its default). */
  readonly audiences: readonly string[];
  /** The requested lifetime; the API server may issue a shorter one. */
  readonly expirationSeconds: number;
  readonly boundObjectRef: BoundObjectReference;
}

/**
 * A token issued (`TokenRequestStatus`).
 *
 * @public
 */
export interface TokenRequestStatus {
  /** The opaque bearer token. */
  readonly token: string;
  /** When it expires, RFC 3339 (as the API serves it). */
  readonly expirationTimestamp: string;
}

/**
 * A request and, once answered, what was issued (`authentication.k8s.io/v1` TokenRequest).
 *
 * @public
 */
export interface TokenRequest {
  readonly spec: TokenRequestSpec;
  readonly status: TokenRequestStatus;
}

/**
 * Service account tokens for pods (upstream token `Manager`, as the volume host's
 * `GetServiceAccountTokenFunc` / `DeleteServiceAccountTokenFunc`). Implementations cache and
 * refresh; callers ask on every set-up of a projected volume.
 *
 * @public
 */
export interface TokenGetter {
  /** A token of service account `name` in `namespace`, for `spec`; rejects when none can be had. */
  getServiceAccountToken(
    namespace: string,
    name: string,
    spec: TokenRequestSpec,
    signal?: AbortSignal,
  ): Promise<TokenRequest>;
  /** Forgets every token bound to the pod (called when its volumes are torn down). */
  deleteServiceAccountToken(podUid: string): void;
}
