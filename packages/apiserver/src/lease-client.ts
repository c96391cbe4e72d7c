import {
  type Lease,
  type LeaseApi,
  LeaseApiError,
  type LeaseApiErrorCode,
  type NodeUidGetter,
} from '@kubelet-kit/core';
// Types only: the clients are made from the agent's kubeconfig.
import type { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { httpStatusOf } from './api-errors.js';
import { toPlainObject } from './status-sink.js';

/**
 * The part of `CoordinationV1Api` (object-parameter form, client-node 1.4) the lease client calls.
 *
 * @public
 */
export type LeaseCoordinationApi = Pick<
  CoordinationV1Api,
  'readNamespacedLease' | 'createNamespacedLease' | 'replaceNamespacedLease'
>;

/**
 * The part of `CoreV1Api` the lease client reads the Node's UID with.
 *
 * @public
 */
export type NodeReadApi = Pick<CoreV1Api, 'readNode'>;

/**
 * Options of {@link ApiserverLeaseClient}.
 *
 * @public
 */
export interface ApiserverLeaseClientOptions {
  readonly coordination: LeaseCoordinationApi;
  /** For `getNodeUid`; without it the lookup rejects. */
  readonly core?: NodeReadApi;
}

/** The Status body of a failed call, which client-node passes parsed or as a string. */
function statusBody(err: unknown): { reason?: unknown; message?: unknown } | undefined {
  const body = (err as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as { reason?: unknown; message?: unknown };
    } catch {
      return undefined;
    }
  }
  return typeof body === 'object' && body !== null ? body : undefined;
}

/** The Status message, or the first line of the error's own (client-node's holds the whole response). */
function statusMessage(err: unknown): string {
  const message = statusBody(err)?.message;
  if (typeof message === 'string') return message;
  return err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
}

/**
 * A failed call as a `LeaseApiError`. A 409 is a Conflict on update and AlreadyExists on create
 * unless the Status says which; anything without an HTTP status (a refused connection) is Other.
 */
export function toLeaseApiError(err: unknown, what: string, on409: LeaseApiErrorCode): LeaseApiError {
  if (err instanceof LeaseApiError) return err;
  const status = httpStatusOf(err);
  const reason = statusBody(err)?.reason;
  let code: LeaseApiErrorCode = 'Other';
  if (status === 404) code = 'NotFound';
  else if (status === 409) code = reason === 'AlreadyExists' || reason === 'Conflict' ? reason : on409;
  return new LeaseApiError(code, `${what}: ${statusMessage(err)}`, {
    ...(status === undefined ? {} : { status }),
    cause: err,
  });
}

function namesOf(lease: Lease): { namespace: string; name: string } {
  const namespace = lease.metadata?.namespace;
  const name = lease.metadata?.name;
  if (!namespace || !name) {
    throw new LeaseApiError('Other', 'lease: metadata.namespace and metadata.name must be set');
  }
  return { namespace, name };
}

/**
 * A `LeaseApi` and `NodeUidGetter` (from `@kubelet-kit/core`) over the API server's
 * coordination.k8s.io/v1 Leases and v1 Nodes, for the node lease controller.
 *
 * @public
 */
export class ApiserverLeaseClient implements LeaseApi, NodeUidGetter {
  readonly #coordination: LeaseCoordinationApi;
  readonly #core: NodeReadApi | undefined;

  constructor(options: ApiserverLeaseClientOptions) {
    this.#coordination = options.coordination;
    this.#core = options.core;
  }

  async get(namespace: string, name: string, signal?: AbortSignal): Promise<Lease> {
    signal?.throwIfAborted();
    try {
      return toPlainObject(await this.#coordination.readNamespacedLease({ name, namespace })) as Lease;
    } catch (err) {
      throw toLeaseApiError(err, `get lease ${namespace}/${name}`, 'Conflict');
    }
  }

  async create(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    signal?.throwIfAborted();
    const { namespace, name } = namesOf(lease);
    try {
      // The client's types want its model classes; the plain object is what goes on the wire.
      const body = lease as Parameters<LeaseCoordinationApi['createNamespacedLease']>[0]['body'];
      return toPlainObject(await this.#coordination.createNamespacedLease({ namespace, body })) as Lease;
    } catch (err) {
      throw toLeaseApiError(err, `create lease ${namespace}/${name}`, 'AlreadyExists');
    }
  }

  async update(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    signal?.throwIfAborted();
    const { namespace, name } = namesOf(lease);
    try {
      const body = lease as Parameters<LeaseCoordinationApi['replaceNamespacedLease']>[0]['body'];
      return toPlainObject(
        await this.#coordination.replaceNamespacedLease({ name, namespace, body }),
      ) as Lease;
    } catch (err) {
      throw toLeaseApiError(err, `update lease ${namespace}/${name}`, 'Conflict');
    }
  }

  async getNodeUid(nodeName: string, signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    if (!this.#core) throw new LeaseApiError('Other', `get node ${nodeName}: no Node client`);
    let uid: string | undefined;
    try {
      uid = (await this.#core.readNode({ name: nodeName })).metadata?.uid;
    } catch (err) {
      throw toLeaseApiError(err, `get node ${nodeName}`, 'Conflict');
    }
    if (!uid) throw new LeaseApiError('Other', `node ${nodeName} has no metadata.uid`);
    return uid;
  }
}
