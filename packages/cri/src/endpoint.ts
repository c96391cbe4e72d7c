import { status } from '@grpc/grpc-js';
import { CriError } from './errors.js';

/**
 * Turns a CRI endpoint (`unix:///abs/path`, `unix:path`, `tcp://host:port`, or a bare absolute
 * socket path) into a gRPC target.
 * @public
 */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix://')) {
    const path = endpoint.slice('unix://'.length);
    if (path.startsWith('/')) return `unix://${path}`;
  } else if (endpoint.startsWith('unix:')) {
    if (endpoint.length > 'unix:'.length) return endpoint;
  } else if (endpoint.startsWith('tcp://')) {
    const hostPort = endpoint.slice('tcp://'.length).replace(/\/$/, '');
    if (/^(\[[0-9a-fA-F:.]+\]|[^:/]+):\d+$/.test(hostPort)) return hostPort;
  } else if (endpoint.startsWith('/')) {
    // Upstream kubelet falls back to unix for a scheme-less path (with a deprecation warning).
    return `unix://${endpoint}`;
  }
  throw new CriError({
    grpcStatus: status.INVALID_ARGUMENT,
    details: `invalid CRI endpoint ${JSON.stringify(endpoint)}: want unix:///path, unix:path or tcp://host:port`,
    method: 'Dial',
  });
}
