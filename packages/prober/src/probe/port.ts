import type { Container, IntOrString } from '@kubelet-kit/core';
import { ProbeError } from '../errors.js';

/**
 * The port a probe targets (upstream `probe.ResolveContainerPort`): a number as is, a name
 * looked up in the container's ports, or, failing that, a number written as a string.
 */
export function resolveContainerPort(param: IntOrString, container: Container): number {
  let port: number;
  if (typeof param === 'number') {
    port = param;
  } else {
    const named = container.ports?.find((p) => p.name === param);
    if (named) {
      port = named.containerPort;
    } else if (/^[+-]?\d+$/.test(param)) {
      // Last resort, as upstream: maybe it was a number stored as a string.
      port = Number.parseInt(param, 10);
    } else {
      throw new ProbeError('InvalidPort', `strconv.Atoi: parsing ${JSON.stringify(param)}: invalid syntax`);
    }
  }
  if (Number.isInteger(port) && port > 0 && port < 65536) return port;
  throw new ProbeError('InvalidPort', `invalid port number: ${port}`);
}

/** `host:port`, with brackets around an IPv6 host (Go's `net.JoinHostPort`). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
