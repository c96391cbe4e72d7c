import { deepCopy, type Node, type NodeApi, NodeApiError, type ObjectMeta } from '@kubelet-kit/core';

/** ObjectMeta without kubernetes-types' read-only marks: the fields the server fills in. */
type Meta = { -readonly [K in keyof ObjectMeta]: ObjectMeta[K] };

import { applyStrategicMergePatch } from './strategic-merge.js';

/** One call an {@link InMemoryNodeApi} answered (or refused). @public */
export interface NodeApiCall {
  readonly verb: 'get' | 'create' | 'patchStatus';
  readonly name: string;
  /** The patch of a `patchStatus`, the object of a `create`. */
  readonly body?: unknown;
}

/**
 * A `NodeApi` (from `@kubelet-kit/core`) over a map in memory, for tests: resourceVersions, UIDs and
 * creationTimestamps as an API server gives them, strategic merge of `nodes/status` (spec left
 * alone), every call recorded, and failures to inject.
 *
 * @public
 */
export class InMemoryNodeApi implements NodeApi {
  readonly nodes = new Map<string, Node>();
  readonly calls: NodeApiCall[] = [];
  /**
   * Fails calls while set: return an error to throw it for that call (e.g. a
   * `NodeApiError('Unavailable', …)`), undefined to answer it.
   */
  fault: ((call: NodeApiCall) => Error | undefined) | undefined;
  #resourceVersion = 0;
  #uid = 0;
  readonly #now: () => number;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /** Stores `node` as if created by someone else (UID and resourceVersion filled in). */
  seed(node: Node): Node {
    const name = node.metadata?.name ?? '';
    const stored = this.#stamp(deepCopy(node));
    this.nodes.set(name, stored);
    return deepCopy(stored);
  }

  async getNode(name: string): Promise<Node> {
    this.#call({ verb: 'get', name });
    const node = this.nodes.get(name);
    if (!node) throw new NodeApiError('NotFound', `nodes "${name}" not found`, { statusCode: 404 });
    return deepCopy(node);
  }

  async createNode(node: Node): Promise<Node> {
    const name = node.metadata?.name ?? '';
    this.#call({ verb: 'create', name, body: deepCopy(node) });
    if (!name)
      throw new NodeApiError('Other', 'Node "" is invalid: metadata.name: Required value', {
        statusCode: 422,
      });
    if (this.nodes.has(name)) {
      throw new NodeApiError('AlreadyExists', `nodes "${name}" already exists`, { statusCode: 409 });
    }
    const stored = this.#stamp(deepCopy(node));
    (stored.metadata as Meta).creationTimestamp = new Date(Math.floor(this.#now() / 1000) * 1000)
      .toISOString()
      .replace('.000Z', 'Z');
    this.nodes.set(name, stored);
    return deepCopy(stored);
  }

  async patchNodeStatus(name: string, patch: Readonly<Record<string, unknown>>): Promise<Node> {
    this.#call({ verb: 'patchStatus', name, body: deepCopy(patch) });
    const node = this.nodes.get(name);
    if (!node) throw new NodeApiError('NotFound', `nodes "${name}" not found`, { statusCode: 404 });
    const patched = applyStrategicMergePatch(node, patch) as Node;
    // The status subresource keeps the spec; name and UID cannot change.
    patched.spec = node.spec;
    patched.metadata = { ...patched.metadata, name, uid: node.metadata?.uid };
    const stored = this.#stamp(patched);
    this.nodes.set(name, stored);
    return deepCopy(stored);
  }

  /** The patches of `nodes/status` sent so far. */
  get statusPatches(): readonly Record<string, unknown>[] {
    return this.calls.filter((c) => c.verb === 'patchStatus').map((c) => c.body as Record<string, unknown>);
  }

  #call(call: NodeApiCall): void {
    this.calls.push(call);
    const err = this.fault?.(call);
    if (err) throw err;
  }

  #stamp(node: Node): Node {
    node.metadata ??= {};
    const meta = node.metadata as Meta;
    meta.uid ??= `node-uid-${++this.#uid}`;
    meta.resourceVersion = String(++this.#resourceVersion);
    return node;
  }
}
