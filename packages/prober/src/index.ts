/**
 * Liveness, readiness and startup probes (exec, http, tcp, grpc) with the kubelet semantics.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
