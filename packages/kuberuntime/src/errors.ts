import { CodedError } from '@kubelet-kit/core';
import { CriError } from '@kubelet-kit/cri';

// Errors with upstream's reason strings as `code`, so callers can switch on them.

/** Reason codes of kuberuntime errors (upstream's strings). @public */
export type KubeRuntimeErrorCode =
  | 'ErrImagePull'
  | 'ImagePullBackOff'
  | 'ErrImageNeverPull'
  | 'ImageInspectError'
  | 'InvalidImageName'
  | 'CrashLoopBackOff'
  | 'CreateContainerConfigError'
  | 'CreateContainerError'
  | 'RunContainerError'
  | 'PostStartHookError'
  | 'PreStopHookError'
  | 'KillContainerError'
  | 'KillPodSandboxError'
  | 'CreatePodSandboxError'
  | 'ConfigPodSandboxError';

/** A failed step of a sync: `code` is upstream's reason, `message` the detail shown to users. @public */
export class KubeRuntimeError extends CodedError<KubeRuntimeErrorCode> {
  constructor(code: KubeRuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super('KubeRuntimeError', code, message, options);
  }
}

/** Thrown when a container config cannot be built; upstream's CreateContainerConfigError. */
export class ContainerConfigError extends CodedError<'CreateContainerConfigError'> {
  constructor(message: string) {
    super('ContainerConfigError', 'CreateContainerConfigError', message);
  }
}

/** The message of an unknown thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return (err as { details?: string }).details ?? err.message;
  return String(err);
}

/** An error as Go's `%v` prints it: a CRI error as `rpc error: code = … desc = …`. */
export function goErrorString(err: unknown): string {
  if (CriError.is(err)) {
    const code = err.code === 'Cancelled' ? 'Canceled' : err.code;
    return `rpc error: code = ${code} desc = ${err.details}`;
  }
  return errorMessage(err);
}
