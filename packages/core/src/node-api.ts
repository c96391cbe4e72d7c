import type { Node } from 'kubernetes-types/core/v1.js';
import { CodedError } from './errors.js';

// What node registration and the node status loop need of an API server (upstream's
// `Nodes()` client as `kubelet_node_status.go` uses it), so that package knows no client.

/**
 * Why a {@link NodeApi} call failed, as upstream's `apierrors.Is…` checks tell them apart:
 * `Unavailable` is an API server that could not be reached or answered 5xx / 429.
 *
 * @public
 */
export type NodeApiErrorCode = 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Unavailable' | 'Other';

/**
 * A failed {@link NodeApi} call.
 *
 * @public
 */
export class NodeApiError extends CodedError<NodeApiErrorCode> {
  /** The HTTP status, when the API server answered. */
  readonly statusCode: number | undefined;
  constructor(code: NodeApiErrorCode, message: string, options?: { statusCode?: number; cause?: unknown }) {
    super('NodeApiError', code, message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.statusCode = options?.statusCode;
  }
}

/**
 * The Node calls of the kubelet: read, create and patch the status of its own Node. Objects are
 * plain API JSON (times as RFC 3339 strings). Failures reject with {@link NodeApiError}.
 *
 * @public
 */
export interface NodeApi {
  /** The Node of that name; rejects with code `NotFound` when there is none. */
  getNode(name: string, signal?: AbortSignal): Promise<Node>;
  /** Creates the Node; rejects with `AlreadyExists` when one of that name exists. */
  createNode(node: Node, signal?: AbortSignal): Promise<Node>;
  /**
   * Applies a strategic merge patch to `nodes/<name>/status` (spec changes are ignored there;
   * metadata such as labels is not) and resolves with the Node as stored.
   */
  patchNodeStatus(
    name: string,
    patch: Readonly<Record<string, unknown>>,
    signal?: AbortSignal,
  ): Promise<Node>;
}

/**
 * Whether the node is under resource pressure, as an eviction manager decides it (upstream
 * `evictionManager.IsUnderMemoryPressure` and its siblings). Node status reports the
 * MemoryPressure, DiskPressure and PIDPressure conditions from it; without one they are False.
 *
 * @public
 */
export interface NodePressureProvider {
  isUnderMemoryPressure(): boolean;
  isUnderDiskPressure(): boolean;
  isUnderPIDPressure(): boolean;
}
