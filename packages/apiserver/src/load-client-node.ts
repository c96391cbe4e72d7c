import type {
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

/**
 * The values of `@kubernetes/client-node` that kubelet-kit's adapters use at run time, with
 * client-node's own types.
 *
 * @public
 */
export interface ClientNodeModule {
  readonly AuthenticationV1Api: typeof AuthenticationV1Api;
  readonly AuthorizationV1Api: typeof AuthorizationV1Api;
  readonly CoordinationV1Api: typeof CoordinationV1Api;
  readonly CoreV1Api: typeof CoreV1Api;
  readonly KubeConfig: typeof KubeConfig;
  readonly NodeV1Api: typeof NodeV1Api;
  readonly Observable: typeof Observable;
  readonly PatchStrategy: typeof PatchStrategy;
  readonly ResponseContext: typeof ResponseContext;
  readonly setHeaderOptions: typeof setHeaderOptions;
  readonly Watch: typeof Watch;
}

/**
 * Loads the parts of client-node the adapters use, from this package's own bundle of them,
 * instead of client-node's index (about 52 MiB of RSS against 10; see the package README). A
 * caller that builds clients for the adapters uses these, so one process loads one copy; a
 * KubeConfig or API client of the caller's own client-node works with the adapters as well.
 *
 * @public
 */
export function loadClientNode(): Promise<ClientNodeModule> {
  return import('./client-node.js');
}
