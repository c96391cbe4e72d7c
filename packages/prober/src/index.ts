/**
 * Liveness, readiness and startup probes (exec, http, tcp, grpc) with the kubelet semantics.
 *
 * @packageDocumentation
 */

export * from './errors.js';
export * from './metrics.js';
export * from './probe/exec.js';
export * from './probe/grpc.js';
export { type HttpProbeOptions, httpProbe, maxRespBodyLength } from './probe/http.js';
export * from './probe/http-request.js';
export * from './probe/port.js';
export * from './probe/tcp.js';
export * from './prober.js';
export * from './prober-manager.js';
export * from './results-manager.js';
export * from './types.js';
export { kubeletRestartGraceMs } from './worker.js';

/** Package version. @public */
export const VERSION = '0.1.0';
