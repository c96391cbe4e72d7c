import net from 'node:net';
import type { Clock } from '@kubelet-kit/core';
import type { ProbeActionResult } from '../types.js';
import { joinHostPort } from './port.js';

/** Options of {@link tcpProbe}. */
export interface TcpProbeOptions {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  /** Times the connect; a timer that fires aborts it. */
  readonly clock: Clock;
  readonly signal?: AbortSignal;
}

/**
 * Opens a TCP connection and closes it (upstream `pkg/probe/tcp`): connected is a success;
 * anything else, a timeout included, is a failure with the dial error, never an error.
 */
export function tcpProbe(options: TcpProbeOptions): Promise<ProbeActionResult> {
  const addr = joinHostPort(options.host, options.port);
  return new Promise<ProbeActionResult>((resolve) => {
    let done = false;
    const socket = net.connect({ host: options.host, port: options.port });
    const finish = (result: ProbeActionResult) => {
      if (done) return;
      done = true;
      timer.cancel();
      options.signal?.removeEventListener('abort', onAbort);
      // Late errors of a socket we are done with must not become uncaught exceptions.
      socket.on('error', () => {});
      // Closed gracefully, not reset: a server that does not expect a reset may fail on it.
      socket.destroy();
      resolve(result);
    };
    const onAbort = () => finish({ result: 'Failure', output: `dial tcp ${addr}: operation was canceled` });
    const timer = options.clock.setTimeout(
      () => finish({ result: 'Failure', output: `dial tcp ${addr}: i/o timeout` }),
      options.timeoutMs,
    );
    socket.once('connect', () => finish({ result: 'Success', output: '' }));
    socket.once('error', (err) => finish({ result: 'Failure', output: `dial tcp ${addr}: ${err.message}` }));
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
