import type { TokenGetter, TokenRequest, TokenRequestSpec } from '@kubelet-kit/core';

/**
 * One request a {@link FakeTokenGetter} answered or refused.
 *
 * @public
 */
export interface FakeTokenRequestRecord {
  readonly namespace: string;
  readonly serviceAccountName: string;
  readonly spec: TokenRequestSpec;
}

/**
 * Issues tokens `<namespace>/<serviceAccount>/<audiences>/<n>` without an API server, expiring
 * `expirationSeconds` after `now()`; records requests and deletions, and refuses while `error`
 * is set.
 *
 * @public
 */
export class FakeTokenGetter implements TokenGetter {
  readonly requests: FakeTokenRequestRecord[] = [];
  /** Pod UIDs passed to `deleteServiceAccountToken`, in order. */
  readonly deleted: string[] = [];
  /** When set, every request rejects with it. */
  error: Error | undefined;
  #issued = 0;
  readonly #now: () => number;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  async getServiceAccountToken(
    namespace: string,
    name: string,
    spec: TokenRequestSpec,
  ): Promise<TokenRequest> {
    this.requests.push({ namespace, serviceAccountName: name, spec });
    if (this.error) throw this.error;
    this.#issued++;
    return {
      spec,
      status: {
        token: `${namespace}/${name}/${spec.audiences.join(',')}/${this.#issued}`,
        expirationTimestamp: new Date(this.#now() + spec.expirationSeconds * 1000).toISOString(),
      },
    };
  }

  deleteServiceAccountToken(podUid: string): void {
    this.deleted.push(podUid);
  }
}
