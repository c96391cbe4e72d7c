/**
 * Test doubles of `@kubelet-kit/nodestatus`: an in-memory NodeApi and its strategic merge.
 *
 * @packageDocumentation
 */

export { InMemoryNodeApi, type NodeApiCall } from './in-memory-node-api.js';
export { applyStrategicMergePatch } from './strategic-merge.js';
