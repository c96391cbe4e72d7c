import { status as GrpcStatus } from '@grpc/grpc-js';

/**
 * The gRPC status of a failed CRI call, named like the Go `codes.Code` constants (except
 * `Cancelled`, spelled the British way as gRPC's own status name `CANCELLED`).
 * @public
 */
export type CriErrorCode =
  | 'Cancelled'
  | 'Unknown'
  | 'InvalidArgument'
  | 'DeadlineExceeded'
  | 'NotFound'
  | 'AlreadyExists'
  | 'PermissionDenied'
  | 'ResourceExhausted'
  | 'FailedPrecondition'
  | 'Aborted'
  | 'OutOfRange'
  | 'Unimplemented'
  | 'Internal'
  | 'Unavailable'
  | 'DataLoss'
  | 'Unauthenticated';

const codeByStatus: Record<number, CriErrorCode> = {
  [GrpcStatus.CANCELLED]: 'Cancelled',
  [GrpcStatus.UNKNOWN]: 'Unknown',
  [GrpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [GrpcStatus.NOT_FOUND]: 'NotFound',
  [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [GrpcStatus.PERMISSION_DENIED]: 'PermissionDenied',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [GrpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GrpcStatus.ABORTED]: 'Aborted',
  [GrpcStatus.OUT_OF_RANGE]: 'OutOfRange',
  [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [GrpcStatus.INTERNAL]: 'Internal',
  [GrpcStatus.UNAVAILABLE]: 'Unavailable',
  [GrpcStatus.DATA_LOSS]: 'DataLoss',
  [GrpcStatus.UNAUTHENTICATED]: 'Unauthenticated',
};

const statusByCode = Object.fromEntries(
  Object.entries(codeByStatus).map(([status, code]) => [code, Number(status)]),
) as Record<CriErrorCode, number>;

/** The {@link CriErrorCode} of a gRPC status number (`Unknown` for anything unexpected). @public */
export function criErrorCodeOf(grpcStatus: number): CriErrorCode {
  return codeByStatus[grpcStatus] ?? 'Unknown';
}

/** The gRPC status number of a {@link CriErrorCode}. @public */
export function grpcStatusOf(code: CriErrorCode): number {
  return statusByCode[code];
}

/** Options of {@link CriError}. @public */
export interface CriErrorOptions {
  /** gRPC status number (see `@grpc/grpc-js` `status`). */
  grpcStatus: number;
  /** The runtime's own message (gRPC status details), unchanged. */
  details: string;
  /** The RPC, e.g. `RunPodSandbox`. */
  method: string;
  cause?: unknown;
}

/**
 * A failed CRI call. `code` names the gRPC status; `details` is the runtime's message as sent;
 * `message` reads like Go's status error (`rpc error: code = NotFound desc = ...`).
 * @public
 */
export class CriError extends Error {
  readonly code: CriErrorCode;
  readonly grpcStatus: number;
  readonly details: string;
  readonly method: string;

  constructor(options: CriErrorOptions) {
    const code = criErrorCodeOf(options.grpcStatus);
    super(`${options.method}: rpc error: code = ${code} desc = ${options.details}`, {
      cause: options.cause,
    });
    this.name = 'CriError';
    this.code = code;
    this.grpcStatus = options.grpcStatus;
    this.details = options.details;
    this.method = options.method;
  }

  /** True when `err` is a {@link CriError} (with the given code, if any). */
  static is(err: unknown, code?: CriErrorCode): err is CriError {
    return err instanceof CriError && (code === undefined || err.code === code);
  }
}
