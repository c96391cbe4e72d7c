import { type CriErrorCode, grpcStatusOf } from '../errors.js';
import type { PartialMessage } from '../options.js';

/** An error a fake handler throws to answer with a gRPC status. */
export class StatusError extends Error {
  readonly grpcStatus: number;
  constructor(code: CriErrorCode | number, details: string) {
    super(details);
    this.name = 'StatusError';
    this.grpcStatus = typeof code === 'number' ? code : grpcStatusOf(code);
  }
}

/** A server-side stream: `write` sends one response; `signal` fires when the client goes away. */
export interface ResponseStream<R> {
  write(response: PartialMessage<R>): void;
  readonly signal: AbortSignal;
}

type UnaryHandler<Q, R> = (request: Q) => PartialMessage<R> | Promise<PartialMessage<R>>;
type StreamHandler<Q, R> = (request: Q, stream: ResponseStream<R>) => Promise<void>;

/** Handlers for (some of) the RPCs of a service types table such as `RuntimeServiceTypes`. */
export type HandlerMap<T> = {
  [K in keyof T]?: T[K] extends { request: infer Q; response: infer R; responseStream: true }
    ? StreamHandler<Q, R>
    : T[K] extends { request: infer Q; response: infer R }
      ? UnaryHandler<Q, R>
      : never;
};
