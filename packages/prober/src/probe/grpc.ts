import * as grpc from '@grpc/grpc-js';
import type { Clock } from '@kubelet-kit/core';
import protobuf from 'protobufjs/minimal.js';
import type { ProbeActionResult } from '../types.js';
import { kubeVersion } from './http-request.js';
import { joinHostPort } from './port.js';

// grpc.health.v1, written out: two messages of one field each (HealthCheckRequest.service = 1, a
// string; HealthCheckResponse.status = 1, the ServingStatus enum). Reflection over a defined
// Root would load all of protobufjs (parser, reflection, codegen: about 1 MiB of an agent's
// heap) for what protobufjs' minimal reader and writer do here; the bytes are the same.
const { Reader, Writer } = protobuf;

/** The one field of a one-field message, or undefined; other fields are skipped, as decode does. */
function readField1<T>(b: Uint8Array, read: (r: protobuf.Reader) => T): T | undefined {
  const r = Reader.create(b);
  let value: T | undefined;
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) value = read(r);
    else r.skipType(tag & 7);
  }
  return value;
}

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
    // A field set is written, at its default value too (as protobufjs' encoder for a Root
    // defined without a syntax did).
    requestSerialize: (m: HealthCheckRequest): Buffer => {
      const w = Writer.create();
      if (m.service != null) w.uint32(10).string(String(m.service));
      return Buffer.from(w.finish());
    },
    requestDeserialize: (b: Buffer): HealthCheckRequest => ({
      service: readField1(b, (r) => r.string()) ?? '',
    }),
    responseSerialize: (m: HealthCheckResponse): Buffer => {
      const w = Writer.create();
      // A number that is no ServingStatus is left out, as protobufjs' fromObject left it.
      if (m.status != null && healthServingStatus[m.status] !== undefined) w.uint32(8).int32(m.status);
      return Buffer.from(w.finish());
    },
    responseDeserialize: (b: Buffer): HealthCheckResponse => ({
      status: readField1(b, (r) => r.int32()) ?? 0,
    }),
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
