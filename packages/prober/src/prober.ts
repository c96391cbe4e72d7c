import {
  type Clock,
  type CommandRunner,
  type Container,
  type EventRecorder,
  type HTTPGetAction,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  type PodStatus,
  type Probe,
  type ProbeResult,
  parseContainerID,
  podEventReference,
} from '@kubelet-kit/core';
import { ProbeError } from './errors.js';
import { execProbe, expandContainerCommandOnlyStatic } from './probe/exec.js';
import { grpcProbe } from './probe/grpc.js';
import { AbortWatch, type HttpProbeContext, prepareHttpTarget, runHttpProbe } from './probe/http.js';
import { ProbeHttpError, type ProbeHttpTarget } from './probe/http-client.js';
import { type HttpProbeRequest, newRequestForHTTPGetAction } from './probe/http-request.js';
import { resolveContainerPort } from './probe/port.js';
import { tcpProbe } from './probe/tcp.js';
import { type ProbeActionResult, type ProbeType, probeDefaults } from './types.js';

/** Upstream retries a probe action this many times, on errors only (never on a failure). */
export const maxProbeRetries = 3;

/** Options of {@link Prober}. @public */
export interface ProberOptions {
  /** Runs exec probes in containers (CRI ExecSync). */
  readonly runner: CommandRunner;
  /** Times the network probes' timeouts. */
  readonly clock: Clock;
  /** Receives `Unhealthy` and `ProbeWarning` events (default: dropped). */
  readonly recorder?: EventRecorder;
  readonly logger?: Logger;
}

/** The probe of `probeType` in a container's spec, if it has one. */
export function probeForType(container: Container, probeType: ProbeType): Probe | undefined {
  switch (probeType) {
    case 'Liveness':
      return container.livenessProbe;
    case 'Readiness':
      return container.readinessProbe;
    case 'Startup':
      return container.startupProbe;
  }
}

/**
 * The grace period (seconds) to kill a container with when it is restarted because of a
 * failed liveness or startup probe: the probe-level `terminationGracePeriodSeconds`, which
 * overrides the pod's. Undefined when the probe sets none.
 */
export function getProbeTerminationGracePeriodSeconds(
  container: Container,
  probeType: 'Liveness' | 'Startup',
): number | undefined {
  return probeForType(container, probeType)?.terminationGracePeriodSeconds ?? undefined;
}

/**
 * Runs one probe of a container and turns its outcome into a result (upstream `prober.go`):
 * Success and Warning are successes, Failure and Unknown failures, each but Success with an
 * event. An error is retried up to three times, then reported with an event and thrown.
 * @public
 */
export class Prober {
  readonly #runner: CommandRunner;
  readonly #clock: Clock;
  readonly #recorder: EventRecorder;
  readonly #logger: Logger;
  /** Shared by this prober's HTTP probes: a read buffer (used synchronously) and abort listeners. */
  readonly #httpContext: HttpProbeContext = {
    readBuffer: Buffer.allocUnsafe(16 * 1024),
    aborts: new AbortWatch(),
  };
  readonly #requests = new WeakMap<
    HTTPGetAction,
    { podIP: string; request: HttpProbeRequest; target: ProbeHttpTarget | Error }
  >();

  constructor(options: ProberOptions) {
    this.#runner = options.runner;
    this.#clock = options.clock;
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#logger = options.logger ?? noopLogger;
  }

  /**
   * Probes `container` of `pod`. `status` gives the pod IP; `containerId` is `type://id`.
   * Rejects with the last error when every try errored.
   */
  async probe(
    probeType: ProbeType,
    pod: Pod,
    status: PodStatus,
    container: Container,
    containerId: string,
    signal?: AbortSignal,
  ): Promise<ProbeResult> {
    const spec = probeForType(container, probeType);
    if (!spec) return 'Success';
    let outcome: ProbeActionResult | undefined;
    let error: unknown;
    for (let i = 0; i < maxProbeRetries && !signal?.aborted; i++) {
      try {
        outcome = await this.runProbe(spec, pod, status, container, containerId, signal);
        break;
      } catch (err) {
        error = err;
      }
    }
    if (!outcome) {
      const message = error instanceof Error ? error.message : String(error);
      this.#log(probeType, pod, container, { err: message }, 'Probe errored');
      this.#event(
        pod,
        container,
        'Unhealthy',
        `${probeType} probe errored and resulted in ${erroredState(error)} state: ${message}`,
      );
      throw error instanceof Error ? error : new ProbeError('ProbeError', message);
    }
    switch (outcome.result) {
      case 'Success':
        return 'Success';
      case 'Warning':
        this.#event(pod, container, 'ProbeWarning', `${probeType} probe warning: ${outcome.output}`);
        this.#log(probeType, pod, container, { output: outcome.output }, 'Probe succeeded with a warning');
        return 'Success';
      case 'Failure':
        this.#log(probeType, pod, container, { output: outcome.output }, 'Probe failed');
        this.#event(pod, container, 'Unhealthy', `${probeType} probe failed: ${outcome.output}`);
        return 'Failure';
      default:
        this.#log(probeType, pod, container, {}, 'Probe unknown without error');
        return 'Failure';
    }
  }

  /** One try of a probe's action, without retries or events. */
  async runProbe(
    spec: Probe,
    pod: Pod,
    status: PodStatus,
    container: Container,
    containerId: string,
    signal?: AbortSignal,
  ): Promise<ProbeActionResult> {
    const timeoutMs = (spec.timeoutSeconds || probeDefaults.timeoutSeconds) * 1000;
    const podIP = status.podIP ?? '';
    if (spec.exec) {
      // Only the container's own env values: exec probes never see the pod's runtime env.
      const command = expandContainerCommandOnlyStatic(spec.exec.command ?? [], container.env);
      return execProbe({
        runner: this.#runner,
        containerId: parseContainerID(containerId).id,
        command,
        timeoutMs,
        ...(signal ? { signal } : {}),
      });
    }
    if (spec.httpGet) {
      // The request only changes with the pod IP: build it once per probe spec, not per probe.
      let cached = this.#requests.get(spec.httpGet);
      if (cached?.podIP !== podIP) {
        const request = newRequestForHTTPGetAction(spec.httpGet, container, podIP);
        cached = { podIP, request, target: prepareHttpTarget(request) };
        this.#requests.set(spec.httpGet, cached);
      }
      return runHttpProbe(
        { timeoutMs, clock: this.#clock, request: cached.request, ...(signal ? { signal } : {}) },
        cached.target,
        this.#httpContext,
      );
    }
    const common = { timeoutMs, clock: this.#clock, ...(signal ? { signal } : {}) };
    if (spec.tcpSocket) {
      const port = resolveContainerPort(spec.tcpSocket.port, container);
      return tcpProbe({ ...common, host: spec.tcpSocket.host || podIP, port });
    }
    if (spec.grpc) {
      return grpcProbe({ ...common, host: podIP, port: spec.grpc.port, service: spec.grpc.service ?? '' });
    }
    const m = pod.metadata ?? {};
    throw new ProbeError(
      'MissingProbeHandler',
      `missing probe handler for ${m.name}_${m.namespace}(${m.uid}):${container.name}`,
    );
  }

  #log(
    probeType: ProbeType,
    pod: Pod,
    container: Container,
    fields: Record<string, unknown>,
    message: string,
  ): void {
    this.#logger.debug(
      {
        probeType,
        pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
        containerName: container.name,
        ...fields,
      },
      message,
    );
  }

  #event(pod: Pod, container: Container, reason: string, message: string): void {
    const isInit = pod.spec?.initContainers?.some((c) => c.name === container.name) ?? false;
    this.#recorder.event(
      podEventReference(pod, `spec.${isInit ? 'initContainers' : 'containers'}{${container.name}}`),
      'Warning',
      reason,
      message,
    );
  }
}

/**
 * The probe result upstream pairs with an error, for the errored event: an HTTP body that could
 * not be read is a failure (DoHTTPProbe), every other error of an action is unknown.
 */
function erroredState(error: unknown): 'failure' | 'unknown' {
  return error instanceof ProbeError && error.cause instanceof ProbeHttpError ? 'failure' : 'unknown';
}
