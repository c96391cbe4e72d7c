import type { EventRecorder, Logger } from '@kubelet-kit/core';

/**
 * The agent's default event recorder: each event is one log line (a Warning at warn, the rest at
 * info), as the kubelet's events show in its log. Nothing is kept: no endpoint of the agent
 * serves events, and an embedder that wants them passes its own recorder.
 *
 * @internal
 */
export function loggingRecorder(logger: Logger): EventRecorder {
  return {
    event(object, type, reason, message) {
      const fields = {
        event: reason,
        type,
        object: `${object.kind}/${object.namespace ? `${object.namespace}/` : ''}${object.name ?? ''}`,
        ...(object.fieldPath ? { fieldPath: object.fieldPath } : {}),
      };
      if (type === 'Warning') logger.warn(fields, message);
      else logger.info(fields, message);
    },
  };
}
