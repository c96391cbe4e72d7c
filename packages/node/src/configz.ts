import type { AgentOptions } from './agent.js';

const goDuration = (ms: number): string => {
  // metav1.Duration marshals as Go's time.Duration String(): "1m0s", "20s", "500ms".
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`;
};

/** The effective values `/configz` reports, beside the agent's options (its defaults resolved). */
export interface ConfigzInputs {
  readonly rootDirectory: string;
  readonly podLogsDirectory: string;
  readonly port: number;
}

/**
 * The agent's effective configuration as a KubeletConfiguration (kubelet.config.k8s.io/v1beta1
 * field names), as upstream's configz serves it under `kubeletconfig`: the flags' values, with the
 * agent's defaults where a flag was not given. Fields the agent does not implement are left out.
 *
 * @internal
 */
export function kubeletConfigz(options: AgentOptions, effective: ConfigzInputs): Record<string, unknown> {
  const out: Record<string, unknown> = {
    kind: 'KubeletConfiguration',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    enableServer: true,
    ...(options.podManifestPath !== undefined ? { staticPodPath: options.podManifestPath } : {}),
    ...(options.manifestUrl !== undefined ? { staticPodURL: options.manifestUrl } : {}),
    syncFrequency: goDuration(options.syncFrequencyMs ?? 60_000),
    fileCheckFrequency: goDuration(options.fileCheckFrequencyMs ?? 20_000),
    address: options.address ?? '127.0.0.1',
    port: effective.port,
    containerRuntimeEndpoint: options.runtimeEndpoint,
    maxPods: options.maxPods ?? 110,
    podLogsDir: effective.podLogsDirectory,
    clusterDNS: [...(options.clusterDNS ?? [])],
    ...(options.clusterDomain !== undefined ? { clusterDomain: options.clusterDomain } : {}),
    resolvConf: options.resolvConf ?? '/etc/resolv.conf',
    registerNode: options.registerNode ?? true,
    registerWithTaints: [...(options.registerWithTaints ?? [])],
    nodeStatusUpdateFrequency: goDuration(options.nodeStatusUpdateFrequencyMs ?? 10_000),
    nodeStatusReportFrequency: goDuration(
      options.nodeStatusReportFrequencyMs ?? options.nodeStatusUpdateFrequencyMs ?? 300_000,
    ),
    nodeLeaseDurationSeconds: options.nodeLeaseDurationSeconds ?? 40,
    eventRecordQPS: options.eventQPS ?? 50,
    eventBurst: options.eventBurst ?? 100,
    allowedUnsafeSysctls: [...(options.allowedUnsafeSysctls ?? [])],
    systemReserved: { ...(options.systemReserved ?? {}) },
    kubeReserved: { ...(options.kubeReserved ?? {}) },
  };
  return out;
}

/** @internal */
export { goDuration as formatGoDuration };
