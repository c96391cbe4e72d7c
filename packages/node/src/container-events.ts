import {
  type ContainerEventSource,
  ContainerEventsUnimplementedError,
  type RuntimeContainerEvent,
  type RuntimeContainerEventType,
} from '@kubelet-kit/core';
import {
  type ContainerEventResponse,
  ContainerEventType,
  CriError,
  type RuntimeServiceClient,
} from '@kubelet-kit/cri';

const eventTypes: Record<number, RuntimeContainerEventType | undefined> = {
  [ContainerEventType.CONTAINER_CREATED_EVENT]: 'ContainerCreated',
  [ContainerEventType.CONTAINER_STARTED_EVENT]: 'ContainerStarted',
  [ContainerEventType.CONTAINER_STOPPED_EVENT]: 'ContainerStopped',
  [ContainerEventType.CONTAINER_DELETED_EVENT]: 'ContainerDeleted',
};

/** One CRI event as the evented PLEG takes it; undefined for an event type it does not know. */
export function toRuntimeContainerEvent(e: ContainerEventResponse): RuntimeContainerEvent | undefined {
  const type = eventTypes[e.containerEventType];
  if (!type) return undefined;
  const meta = e.podSandboxStatus?.metadata;
  return {
    containerId: e.containerId,
    type,
    createdAt: Math.floor(e.createdAt / 1e6),
    pod: meta?.uid ? { uid: meta.uid, name: meta.name, namespace: meta.namespace } : undefined,
  };
}

/**
 * The CRI runtime's `GetContainerEvents` stream as core's {@link ContainerEventSource}, for the
 * evented PLEG. An UNIMPLEMENTED answer (containerd 1.6) becomes a
 * {@link ContainerEventsUnimplementedError}, so the PLEG falls back to relisting at once. The
 * events' statuses are not converted here: the PLEG reads the pod's status for each event
 * (upstream converts them with `GeneratePodStatus`).
 * @internal
 */
export function criContainerEventSource(
  rs: Pick<RuntimeServiceClient, 'getContainerEvents'>,
): ContainerEventSource {
  return {
    async *getContainerEvents(signal: AbortSignal): AsyncIterable<RuntimeContainerEvent> {
      try {
        for await (const e of rs.getContainerEvents({}, { signal })) {
          const event = toRuntimeContainerEvent(e);
          if (event) yield event;
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof CriError && err.code === 'Unimplemented') {
          throw new ContainerEventsUnimplementedError(
            `the container runtime does not implement GetContainerEvents: ${err.message}`,
            { cause: err },
          );
        }
        throw err;
      }
    },
  };
}
