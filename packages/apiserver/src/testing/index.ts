/**
 * An in-memory Kubernetes API server for tests: REST, watch, patch and graceful deletion on
 * the real wire protocol over HTTP, discovery and Tables for the real kubectl, pod
 * log/exec/attach/portforward proxied to the node's kubelet, and fault hooks.
 *
 * @packageDocumentation
 */

export type { KubeletClientCertificate } from './proxy.js';
// TokenReview and SubjectAccessReview, decided by the test.
export type {
  FakeAccessReviewHook,
  FakeAccessReviewRequest,
  FakeReviewUser,
  FakeTokenReviewHook,
} from './reviews.js';
export {
  FakeApiServer,
  type FakeApiServerOptions,
  type FakeDeleteOptions,
  type FakeIssuedToken,
  type FakeObjectMeta,
  type FakeRequestRecord,
  type FakeWatchInfo,
  type KubeObject,
} from './server.js';
