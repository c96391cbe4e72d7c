import { CodedError } from '@kubelet-kit/core';

/** Codes of {@link ProbeError}. @public */
export type ProbeErrorCode = 'InvalidPort' | 'MissingProbeHandler' | 'ProbeError';

/**
 * A probe could not be run at all (upstream returns these as `err`, not as a failure): the
 * result is thrown away, the action retried up to three times, and an `Unhealthy` event says
 * the probe errored.
 * @public
 */
export class ProbeError extends CodedError<ProbeErrorCode> {
  constructor(code: ProbeErrorCode, message: string, options?: { cause?: unknown }) {
    super('ProbeError', code, message, options);
  }
}
