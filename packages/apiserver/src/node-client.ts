import { type Node, type NodeApi, NodeApiError, type NodeApiErrorCode } from '@kubelet-kit/core';
// Types only: the client is loaded with the agent's kubeconfig.
import type { CoreV1Api } from '@kubernetes/client-node';
import { httpStatusOf } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';
import { toPlainObject } from './status-sink.js';

/**
 * The part of `CoreV1Api` (object-parameter form, client-node 1.4) the Node client calls.
 *
 * @public
 */
export type NodeStatusApi = Pick<CoreV1Api, 'readNode' | 'createNode' | 'patchNodeStatus'>;

/**
 * Options of {@link ApiserverNodeClient}.
 *
 * @public
 */
export interface ApiserverNodeClientOptions {
  /** A client, e.g. `kubeConfig.makeApiClient(CoreV1Api)`. */
  readonly api: NodeStatusApi;
}

/** The API error `err` stands for, as upstream's `apierrors.Is…` would classify it. */
function nodeApiError(err: unknown, verb: 'get' | 'create' | 'patch', name: string): NodeApiError {
  if (err instanceof NodeApiError) return err;
  const statusCode = httpStatusOf(err);
  let code: NodeApiErrorCode;
  if (statusCode === undefined || statusCode >= 500 || statusCode === 429) code = 'Unavailable';
  else if (statusCode === 404) code = 'NotFound';
  else if (statusCode === 409) code = verb === 'create' ? 'AlreadyExists' : 'Conflict';
  else code = 'Other';
  const detail = err instanceof Error ? err.message : String(err);
  return new NodeApiError(code, `${verb} node ${JSON.stringify(name)}: ${detail}`, {
    ...(statusCode !== undefined ? { statusCode } : {}),
    cause: err,
  });
}

/**
 * A `NodeApi` (from `@kubelet-kit/core`) over the API server: `GET /api/v1/nodes/<name>`,
 * `POST /api/v1/nodes`, and `PATCH /api/v1/nodes/<name>/status` as
 * `application/strategic-merge-patch+json`. Objects come back as plain API JSON.
 *
 * @public
 */
export class ApiserverNodeClient implements NodeApi {
  readonly #api: NodeStatusApi;

  constructor(options: ApiserverNodeClientOptions) {
    this.#api = options.api;
  }

  async getNode(name: string, signal?: AbortSignal): Promise<Node> {
    signal?.throwIfAborted();
    try {
      return toPlainObject(await this.#api.readNode({ name })) as Node;
    } catch (err) {
      throw nodeApiError(err, 'get', name);
    }
  }

  async createNode(node: Node, signal?: AbortSignal): Promise<Node> {
    signal?.throwIfAborted();
    const name = node.metadata?.name ?? '';
    try {
      // The client's types want its model classes; the plain object is what goes on the wire.
      const body = node as Parameters<NodeStatusApi['createNode']>[0]['body'];
      return toPlainObject(await this.#api.createNode({ body })) as Node;
    } catch (err) {
      throw nodeApiError(err, 'create', name);
    }
  }

  async patchNodeStatus(
    name: string,
    patch: Readonly<Record<string, unknown>>,
    signal?: AbortSignal,
  ): Promise<Node> {
    signal?.throwIfAborted();
    try {
      const { PatchStrategy, setHeaderOptions } = await loadClientNode();
      // client-node 1.x sends JSON Patch unless told otherwise; node status is a strategic merge.
      const updated = await this.#api.patchNodeStatus(
        { name, body: patch },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
      return toPlainObject(updated) as Node;
    } catch (err) {
      throw nodeApiError(err, 'patch', name);
    }
  }
}
