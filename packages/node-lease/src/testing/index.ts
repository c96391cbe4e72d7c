/**
 * Test doubles for `@kubelet-kit/node-lease`: an in-memory Lease API with resourceVersion
 * conflicts and fault injection.
 *
 * @packageDocumentation
 */

export { InMemoryLeaseApi, type LeaseApiCall } from './in-memory-lease-api.js';
