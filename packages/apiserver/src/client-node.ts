/**
 * The run-time values of `@kubernetes/client-node` that kubelet-kit's adapters use, and nothing
 * else. The build replaces this module's compiled form with one file holding only them and what
 * they need (scripts/bundle-client-node.mjs): client-node's index loads about 970 modules, every
 * API group and all their wrappers, and costs an agent about 52 MiB of RSS; this bundle about
 * 10 MiB. The types stay client-node's own, so objects pass between the two either way.
 *
 * @internal
 */
export {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  NodeV1Api,
  Observable,
  PatchStrategy,
  ResponseContext,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
