import type { Service } from 'kubernetes-types/core/v1.js';

// What the kubelet reads of the cluster's Services (upstream kubelet's serviceLister and its
// informer's HasSynced): the Services of a pod's namespace, and `default/kubernetes`, become
// container environment variables.

/**
 * The cluster's Services as last listed and watched.
 *
 * @public
 */
export interface ServiceLister {
  /** The Services of one namespace, in no particular order; empty before the first list. */
  list(namespace: string): readonly Service[];
  /** Whether the first list has come back (upstream's informer `HasSynced`). */
  hasSynced(): boolean;
}
