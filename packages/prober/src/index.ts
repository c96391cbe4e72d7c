/**
 * Liveness, readiness and startup probes (exec, http, tcp, grpc) with the kubelet semantics.
 *
 * @packageDocumentation
 */

export { ProbeError, type ProbeErrorCode } from './errors.js';
export { Prober, type ProberOptions } from './prober.js';
export { DefaultProbeManager, type ProbeManager, type ProbeManagerOptions } from './prober-manager.js';
export { DefaultResultsManager, type ResultsManager, type ResultsManagerOptions } from './results-manager.js';
export type { ProbeActionResult, ProbeOutcome, ProbeType } from './types.js';

/** Package version. @public */
export const VERSION = '0.1.0';
