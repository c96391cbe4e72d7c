/**
 * Every adapter of kubelet-kit to a Kubernetes API server, over `@kubernetes/client-node`: the
 * pod source, the status sink, the ConfigMap and Secret getter, the mirror pod client, the
 * RuntimeClass getter and the Service lister. The managers know no API server; this package
 * plugs them into one.
 *
 * @packageDocumentation
 */

export {
  ApiserverMirrorClient,
  type ApiserverMirrorClientOptions,
  type MirrorPodApi,
} from './mirror-client.js';
export {
  ApiserverNodeClient,
  type ApiserverNodeClientOptions,
  type NodeStatusApi,
} from './node-client.js';
export { ApiserverObjectGetter, type ApiserverObjectGetterOptions } from './object-getter.js';
export { ApiserverSource, type ApiserverSourceOptions, type ApiserverSourceStats } from './pod-source.js';
export {
  ApiserverRuntimeClassList,
  type ApiserverRuntimeClassListOptions,
  type ApiserverRuntimeClassListStats,
} from './runtime-classes.js';
export {
  ApiserverServiceLister,
  type ApiserverServiceListerOptions,
  type ApiserverServiceListerStats,
} from './service-lister.js';
export {
  ApiserverStatusSink,
  type ApiserverStatusSinkOptions,
  createMergePatch,
  type PodStatusApi,
  StatusConflictError,
  toPlainObject,
} from './status-sink.js';

/** Package version. @public */
export const VERSION = '0.1.0';
