import * as grpc from '@grpc/grpc-js';
import type { Clock } from '@kubelet-kit/core';
import protobuf from 'protobufjs';
import type { ProbeActionResult } from '../types.js';
import { kubeVersion } from './http-request.js';
import { joinHostPort } from './port.js';

// grpc.health.v1, defined in place: two one-field messages and an enum need no .proto file.
const healthNamespace = new protobuf.Root().define('grpc.health.v1');
const servingStatus = new protobuf.Enum('ServingStatus', {
  UNKNOWN: 0,
  SERVING: 1,
  NOT_SERVING: 2,
  SERVICE_UNKNOWN: 3,
});
const healthCheckRequest = new protobuf.Type('HealthCheckRequest').add(
  new protobuf.Field('service', 1, 'string'),
);
const healthCheckResponse = new protobuf.Type('HealthCheckResponse')
  .add(servingStatus)
  .add(new protobuf.Field('status', 1, 'ServingStatus'));
healthNamespace.add(healthCheckRequest).add(healthCheckResponse);
healthNamespace.root.resolveAll();

/** A `grpc.health.v1.HealthCheckRequest`. */
export interface HealthCheckRequest {
  service: string;
}

/** A `grpc.health.v1.HealthCheckResponse`; `status` is the ServingStatus number. */
export interface HealthCheckResponse {
  status: number;
}

/** The names of `grpc.health.v1.HealthCheckResponse.ServingStatus` by number. */
export const healthServingStatus: Readonly<Record<number, string>> = {
  0: 'UNKNOWN',
  1: 'SERVING',
  2: 'NOT_SERVING',
  3: 'SERVICE_UNKNOWN',
};

/**
 * The grpc-js definition of `grpc.health.v1.Health/Check`, for clients and for servers
 * (tests and examples serve it with `server.addService(healthServiceDefinition, …)`).
 */
export const healthServiceDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: (m: HealthCheckRequest): Buffer =>
      Buffer.from(healthCheckRequest.encode(healthCheckRequest.fromObject(m)).finish()),
    requestDeserialize: (b: Buffer): HealthCheckRequest => {
      const m = healthCheckRequest.toObject(healthCheckRequest.decode(b), { defaults: true });
      return { service: String(m.service ?? '') };
    },
    responseSerialize: (m: HealthCheckResponse): Buffer =>
      Buffer.from(healthCheckResponse.encode(healthCheckResponse.fromObject(m)).finish()),
    responseDeserialize: (b: Buffer): HealthCheckResponse => {
      const m = healthCheckResponse.toObject(healthCheckResponse.decode(b), {
        defaults: true,
        enums: Number,
      });
      return { status: Number(m.status ?? 0) };
    },
  },
} satisfies grpc.ServiceDefinition;

/** Options of {@link grpcProbe}. */
export interface GrpcProbeOptions {
  readonly host: string;
  readonly port: number;
  /** The service name asked about; "" means the server as a whole. */
  readonly service: string;
  readonly timeoutMs: number;
  readonly clock: Clock;
  readonly signal?: AbortSignal;
}

/**
 * Calls `grpc.health.v1.Health/Check` on a fresh insecure channel (upstream `pkg/probe/grpc`):
 * SERVING is a success, anything else, every error included, a failure.
 */
export function grpcProbe(options: GrpcProbeOptions): Promise<ProbeActionResult> {
  const addr = joinHostPort(options.host, options.port);
  const timeout = formatDuration(options.timeoutMs);
  const client = new grpc.Client(addr, grpc.credentials.createInsecure(), {
    'grpc.primary_user_agent': `kube-probe/${kubeVersion.major}.${kubeVersion.minor}`,
    // One probe, one connection: never share a channel with another probe.
    'grpc.use_local_subchannel_pool': 1,
  });
  return new Promise<ProbeActionResult>((resolve) => {
    let done = false;
    let timedOut = false;
    let connected = false;
    const finish = (result: ProbeActionResult) => {
      if (done) return;
      done = true;
      timer.cancel();
      options.signal?.removeEventListener('abort', onAbort);
      client.close();
      resolve(result);
    };
    const call = client.makeUnaryRequest(
      healthServiceDefinition.Check.path,
      healthServiceDefinition.Check.requestSerialize,
      healthServiceDefinition.Check.responseDeserialize,
      { service: options.service },
      new grpc.Metadata(),
      {},
      (err, resp) => {
        if (err) {
          finish({ result: 'Failure', output: errorOutput(err, addr, timeout, timedOut, connected) });
        } else if (resp?.status !== 1) {
          const name = healthServingStatus[resp?.status ?? 0] ?? String(resp?.status);
          finish({ result: 'Failure', output: `service unhealthy (responded with ${JSON.stringify(name)})` });
        } else {
          finish({ result: 'Success', output: 'service healthy' });
        }
      },
    );
    call.on('metadata', () => {
      connected = true;
    });
    const timer = options.clock.setTimeout(() => {
      timedOut = true;
      connected ||= client.getChannel().getConnectivityState(false) === grpc.connectivityState.READY;
      call.cancel();
    }, options.timeoutMs);
    const onAbort = () => call.cancel();
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function errorOutput(
  err: grpc.ServiceError,
  addr: string,
  timeout: string,
  timedOut: boolean,
  connected: boolean,
): string {
  if (timedOut) {
    return connected
      ? `timeout: health rpc did not complete within ${timeout}`
      : `timeout: failed to connect service ${JSON.stringify(addr)} within ${timeout}: context deadline exceeded`;
  }
  switch (err.code) {
    case grpc.status.UNIMPLEMENTED:
      return `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${err.details}`;
    // A server answering DEADLINE_EXCEEDED reads as a timeout upstream too.
    case grpc.status.DEADLINE_EXCEEDED:
      return `timeout: health rpc did not complete within ${timeout}`;
    case grpc.status.UNAVAILABLE:
      return `error: failed to connect service at ${JSON.stringify(addr)}: ${err.details}`;
    default:
      return `error: health rpc probe failed: rpc error: code = ${goCodeNames[err.code] ?? ''} desc = ${err.details}`;
  }
}

/** grpc-go's names of the status codes (codes.Code's String()), which upstream's messages carry. */
const goCodeNames: readonly string[] = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** Go's time.Duration format for whole seconds and milliseconds (`1s`, `1.5s`, `500ms`). */
function formatDuration(ms: number): string {
  return ms >= 1000 || ms === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
