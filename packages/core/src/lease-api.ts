import type { Lease } from 'kubernetes-types/coordination/v1.js';
import { CodedError } from './errors.js';

/**
 * What a {@link LeaseApi} call failed with, as upstream's `apierrors.IsNotFound` / `IsConflict` /
 * `IsAlreadyExists` tell them apart; everything else (the API server down, a 500) is `Other`.
 *
 * @public
 */
export type LeaseApiErrorCode = 'NotFound' | 'Conflict' | 'AlreadyExists' | 'Other';

/**
 * A failed {@link LeaseApi} call. The lease controller switches on `code`: a `Conflict` makes it
 * read the lease again, a `NotFound` on get makes it create one.
 *
 * @public
 */
export class LeaseApiError extends CodedError<LeaseApiErrorCode> {
  /** The HTTP status, when the API server answered. */
  readonly status: number | undefined;
  constructor(code: LeaseApiErrorCode, message: string, options?: { status?: number; cause?: unknown }) {
    super(
      'LeaseApiError',
      code,
      message,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.status = options?.status;
  }
}

/**
 * The coordination.k8s.io/v1 Lease calls the node lease controller makes (upstream
 * `coordclientset.LeaseInterface`, reduced to get, create and update). Implementations reject
 * with a {@link LeaseApiError}; any other rejection counts as `Other`.
 *
 * @public
 */
export interface LeaseApi {
  /** Reads `namespace/name`; rejects with code `NotFound` when there is none. */
  get(namespace: string, name: string, signal?: AbortSignal): Promise<Lease>;
  /** Creates the lease in `lease.metadata.namespace`; `AlreadyExists` when its name is taken. */
  create(lease: Lease, signal?: AbortSignal): Promise<Lease>;
  /** Replaces the lease (a PUT); `Conflict` when `metadata.resourceVersion` is stale. */
  update(lease: Lease, signal?: AbortSignal): Promise<Lease>;
}

/**
 * Looks up the UID of a Node by name, so the node lease can name its Node as owner (upstream
 * `SetNodeOwnerFunc` reads the Node for it). Rejects when the Node does not exist (yet).
 *
 * @public
 */
export interface NodeUidGetter {
  getNodeUid(nodeName: string, signal?: AbortSignal): Promise<string>;
}
