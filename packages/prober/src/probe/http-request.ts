import type { Container, HTTPGetAction } from '@kubelet-kit/core';
import { joinHostPort, resolveContainerPort } from './port.js';

/** The Kubernetes minor release whose user agent probes send (`kube-probe/1.34`). */
export const kubeVersion = { major: '1', minor: '34' } as const;

/** A probe's GET request: where to, and its headers in order (a name may repeat). */
export interface HttpProbeRequest {
  readonly url: URL;
  readonly headers: ReadonlyArray<readonly [name: string, value: string]>;
}

/**
 * The URL of an httpGet probe (upstream `GetProbeUrl`): the scheme lowercased (default http),
 * the host defaulting to the pod IP, the port resolved from the container's named ports.
 */
export function getProbeUrl(httpGet: HTTPGetAction, container: Container, podIP: string): URL {
  const scheme = (httpGet.scheme ?? '').toLowerCase() || 'http';
  const host = httpGet.host || podIP;
  const port = resolveContainerPort(httpGet.port, container);
  return formatURL(scheme, host, port, httpGet.path ?? '');
}

/** The request an httpGet probe sends (upstream `NewRequestForHTTPGetAction`). */
export function newRequestForHTTPGetAction(
  httpGet: HTTPGetAction,
  container: Container,
  podIP: string,
  userAgentFragment = 'probe',
): HttpProbeRequest {
  const url = getProbeUrl(httpGet, container, podIP);
  const headers = (httpGet.httpHeaders ?? []).map((h) => [h.name, h.value] as const);
  return newProbeRequest(url, headers, userAgentFragment);
}

/**
 * Adds the default headers (upstream `newProbeRequest`): `User-Agent: kube-<fragment>/1.34`
 * unless given, `Accept: *\/*` unless given, and no Accept at all when it was given empty.
 */
export function newProbeRequest(
  url: URL,
  headers: ReadonlyArray<readonly [string, string]>,
  userAgentFragment = 'probe',
): HttpProbeRequest {
  const out = headers.map(([n, v]) => [n, v] as const);
  const has = (name: string) => out.some(([n]) => n.toLowerCase() === name);
  if (!has('user-agent')) {
    out.push(['User-Agent', `kube-${userAgentFragment}/${kubeVersion.major}.${kubeVersion.minor}`]);
  }
  const accept = out.find(([n]) => n.toLowerCase() === 'accept');
  if (!accept) out.push(['Accept', '*/*']);
  else if (accept[1] === '') return { url, headers: out.filter(([n]) => n.toLowerCase() !== 'accept') };
  return { url, headers: out };
}

function formatURL(scheme: string, host: string, port: number, path: string): URL {
  const base = `${scheme}://${joinHostPort(host, port)}`;
  try {
    const parsed = new URL(path, `${base}/`);
    // A path that is itself an absolute URL must not move the probe elsewhere: upstream
    // overrides its scheme and host.
    return new URL(`${parsed.pathname}${parsed.search}`, `${base}/`);
  } catch {
    return new URL(`${base}/`);
  }
}
