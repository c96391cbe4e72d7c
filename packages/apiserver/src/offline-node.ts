// The Node through the offline store: each Node the API server returns (get, create, status
// patch) is kept, so the last one known survives a restart without the API server.

import { type Logger, type Node, type NodeApi, noopLogger, type OfflineStore } from '@kubelet-kit/core';
import { asError } from './api-errors.js';

/**
 * A `NodeApi` that writes every Node it gets back into `store` (kind `Node`, by name). Reads are
 * not answered from the store: registration and status must see the API server's own answer.
 * {@link storedNode} reads the kept one.
 *
 * @public
 */
export function nodeApiWithStore(api: NodeApi, store: OfflineStore, logger: Logger = noopLogger): NodeApi {
  const keep = (node: Node): Node => {
    const name = node.metadata?.name;
    if (name)
      store
        .put('Node', name, node)
        .catch((err: unknown) =>
          logger.warn({ node: name, err: asError(err).message }, 'offline store: keeping the Node failed'),
        );
    return node;
  };
  return {
    getNode: async (name, signal) => keep(await api.getNode(name, signal)),
    createNode: async (node, signal) => keep(await api.createNode(node, signal)),
    patchNodeStatus: async (name, patch, signal) => keep(await api.patchNodeStatus(name, patch, signal)),
  };
}

/**
 * The Node last kept in `store` for `name`, or undefined.
 *
 * @public
 */
export function storedNode(store: OfflineStore, name: string): Promise<Node | undefined> {
  return store.get<Node>('Node', name);
}
