/** Which of a container's probes a worker runs (upstream `probeType`; these are its String() forms). @public */
export type ProbeType = 'Liveness' | 'Readiness' | 'Startup';

/**
 * What one probe action reported (upstream `pkg/probe.Result`). `Warning` counts as a success
 * for the container; `Unknown` counts as a failure.
 * @public
 */
export type ProbeOutcome = 'Success' | 'Warning' | 'Failure' | 'Unknown';

/** The outcome of one probe action and its output (body, command output or failure message). @public */
export interface ProbeActionResult {
  readonly result: ProbeOutcome;
  readonly output: string;
}

/** The API defaults of a probe's numbers (upstream `SetDefaults_Probe`). */
export const probeDefaults = {
  initialDelaySeconds: 0,
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
} as const;
