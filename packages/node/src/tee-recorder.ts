import type { EventRecorder } from '@kubelet-kit/core';

/**
 * An event recorder that hands each event to `local` and, once set, to `remote.recorder` (the API
 * server's, made with the API clients). One failing recorder does not keep the event from the other.
 *
 * @internal
 */
export function teeRecorder(
  local: EventRecorder,
  remote: { recorder?: EventRecorder | undefined },
): EventRecorder {
  return {
    event(object, type, reason, message) {
      try {
        local.event(object, type, reason, message);
      } finally {
        remote.recorder?.event(object, type, reason, message);
      }
    },
  };
}
