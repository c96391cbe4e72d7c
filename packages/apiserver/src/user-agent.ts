import { goArch, goOS } from '@kubelet-kit/core';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * The Kubernetes version whose kubelet behaviour kubelet-kit follows; the version part of its
 * User-Agent.
 *
 * @public
 */
export const KUBELET_COMPATIBLE_VERSION = 'v1.34.0';

/**
 * Options of {@link kubeletUserAgent}; each defaults to what this process is.
 *
 * @public
 */
export interface KubeletUserAgentOptions {
  /** Upstream's `<command>`: default `kubelet`. */
  readonly command?: string;
  /** Default {@link KUBELET_COMPATIBLE_VERSION}. */
  readonly kubernetesVersion?: string;
  /** Node's platform name (default `process.platform`), written as GOOS. */
  readonly platform?: string;
  /** Node's architecture name (default `process.arch`), written as GOARCH. */
  readonly arch?: string;
  /** The kubelet-kit version, in place of upstream's `kubernetes/<commit>`. */
  readonly kitVersion: string;
}

/**
 * The User-Agent the agent sends the API server. Upstream's `rest.DefaultKubernetesUserAgent` is
 * `<command>/<version> (<os>/<arch>) kubernetes/<commit>`; ours keeps its shape and puts the
 * build in the last part: `kubelet/v1.34.0 (linux/amd64) kubelet-kit/0.1.0`.
 *
 * @public
 */
export function kubeletUserAgent(options: KubeletUserAgentOptions): string {
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
  const command = options.command ?? 'kubelet';
  const version = options.kubernetesVersion ?? KUBELET_COMPATIBLE_VERSION;
  return `${command}/${version} (${goOS(platform)}/${goArch(arch)}) kubelet-kit/${options.kitVersion}`;
}

const wrapped = Symbol('kubelet-kit.userAgent');

interface UserAgentCarrier {
  [wrapped]?: { userAgent: string };
}

/**
 * Makes every request made through `kubeConfig` carry `userAgent` in place of client-node's
 * default (`node-fetch`): the generated API clients of `makeApiClient` (through
 * `applySecurityAuthentication`), and `Watch`, `Exec`, `Attach`, `PortForward` and the like
 * (through `applyToHTTPSOptions`, which `applyToFetchOptions` calls). Calling it again replaces
 * the User-Agent.
 *
 * @public
 */
export function setUserAgent(kubeConfig: KubeConfig, userAgent: string): void {
  const carrier = kubeConfig as KubeConfig & UserAgentCarrier;
  const existing = carrier[wrapped];
  if (existing) {
    existing.userAgent = userAgent;
    return;
  }
  const state = { userAgent };
  carrier[wrapped] = state;
  // Own properties shadow the prototype's methods, and client-node calls both through `this`.
  const applyToHTTPSOptions = kubeConfig.applyToHTTPSOptions.bind(kubeConfig);
  kubeConfig.applyToHTTPSOptions = async (opts) => {
    await applyToHTTPSOptions(opts);
    opts.headers = { ...opts.headers, 'User-Agent': state.userAgent };
  };
  const applySecurityAuthentication = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  kubeConfig.applySecurityAuthentication = async (context) => {
    await applySecurityAuthentication(context);
    context.setHeaderParam('User-Agent', state.userAgent);
  };
}
