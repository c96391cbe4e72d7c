import type { RuntimeClassGetter } from '@kubelet-kit/core';

// The runtime handler of a pod's RuntimeClass (upstream `runtimeclass.Manager.LookupRuntimeHandler`).

/** A pod names a RuntimeClass that does not exist; upstream's lister NotFound error. */
export class RuntimeClassNotFoundError extends Error {
  readonly code = 'NotFound';
  readonly runtimeClassName: string;
  constructor(name: string) {
    super(`runtimeclass.node.k8s.io ${JSON.stringify(name)} not found`);
    this.name = 'RuntimeClassNotFoundError';
    this.runtimeClassName = name;
  }
}

/**
 * The runtime handler for `runtimeClassName`: "" (the runtime's default) when the pod names none,
 * else the RuntimeClass's handler. An unknown RuntimeClass throws {@link RuntimeClassNotFoundError};
 * without a getter every named RuntimeClass is unknown (upstream, without an API server, would
 * run the pod under the default handler: weaker than asked).
 */
export function lookupRuntimeHandler(
  getter: RuntimeClassGetter | undefined,
  runtimeClassName: string | null | undefined,
): string {
  if (!runtimeClassName) return '';
  const rc = getter?.getRuntimeClass(runtimeClassName);
  if (!rc) throw new RuntimeClassNotFoundError(runtimeClassName);
  return rc.handler;
}
