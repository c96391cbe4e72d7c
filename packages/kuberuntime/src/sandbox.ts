import fs from 'node:fs/promises';
import { isIP } from 'node:net';
import type { Pod, RuntimeClassGetter, RuntimeSandboxStatus } from '@kubelet-kit/core';
import {
  type PodSandboxStatus as CriPodSandboxStatus,
  NamespaceMode,
  type PartialMessage,
  type PodSandboxConfig,
  PodSandboxState,
  type RuntimeServiceClient,
} from '@kubelet-kit/cri';
import { goErrorString } from './errors.js';
import { nsToMs, podDesc } from './helpers.js';
import { lookupRuntimeHandler } from './runtime-class.js';

// Sandbox creation and the sandbox's part of a pod's status (upstream `kuberuntime_sandbox.go`).

/** What createPodSandbox needs of the manager. */
export interface SandboxContext {
  readonly runtimeService: Pick<RuntimeServiceClient, 'runPodSandbox'>;
  readonly runtimeClassGetter?: RuntimeClassGetter | undefined;
  /** The manager's sandbox config for the pod (with its DNS, cgroup parent, user namespace). */
  generatePodSandboxConfig(pod: Pod, attempt: number): PartialMessage<PodSandboxConfig>;
  /** Reads the runtime's handlers and features if no status check has yet. */
  ensureRuntimeStatus(signal?: AbortSignal): Promise<void>;
  /** Runs a creation call within the manager's bound on creation calls. */
  creationCall<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

/** A failed step of sandbox creation: `message` is upstream's "Failed to … for pod …: <error>". */
export class SandboxCreationError extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what}: ${goErrorString(cause)}`, { cause });
    this.name = 'SandboxCreationError';
  }
}

/**
 * Makes the pod's sandbox (upstream `createPodSandbox`): its config, its log directory, then
 * RunPodSandbox with the RuntimeClass's handler. Resolves with the sandbox ID and the config the
 * pod's containers are to be created with.
 */
export async function createPodSandbox(
  ctx: SandboxContext,
  pod: Pod,
  attempt: number,
  signal?: AbortSignal,
): Promise<{ podSandboxId: string; config: PartialMessage<PodSandboxConfig> }> {
  // Each failing step says what failed, with the pod, as upstream's messages do.
  const quotedPod = JSON.stringify(podDesc(pod));
  // A user namespace needs the handlers' features.
  if (pod.spec?.hostUsers === false) await ctx.ensureRuntimeStatus(signal);
  let config: PartialMessage<PodSandboxConfig>;
  let runtimeHandler: string;
  try {
    config = ctx.generatePodSandboxConfig(pod, attempt);
    runtimeHandler = lookupRuntimeHandler(ctx.runtimeClassGetter, pod.spec?.runtimeClassName);
  } catch (err) {
    throw new SandboxCreationError(`Failed to generate sandbox config for pod ${quotedPod}`, err);
  }
  try {
    // Through the thread pool, as the container's writes (see generateContainerConfig).
    if (config.logDirectory) await fs.mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
  } catch (err) {
    throw new SandboxCreationError(`Failed to create log directory for pod ${quotedPod}`, err);
  }
  try {
    const res = await ctx.creationCall(
      () => ctx.runtimeService.runPodSandbox({ config, runtimeHandler }, { signal }),
      signal,
    );
    return { podSandboxId: res.podSandboxId, config };
  } catch (err) {
    throw new SandboxCreationError(`Failed to create sandbox for pod ${quotedPod}`, err);
  }
}

/** A sandbox's IPs (upstream `determinePodSandboxIPs`): the primary if any, then the others; none if one is not an IP. */
export function determinePodSandboxIPs(s: CriPodSandboxStatus): string[] {
  const network = s.network;
  if (!network) return [];
  const ips = network.ip ? [network.ip] : [];
  for (const a of network.additionalIps) ips.push(a.ip);
  return ips.every((ip) => isIP(ip) !== 0) ? ips : [];
}

/** A CRI sandbox status as the runtime-neutral one; a host-network sandbox has no IPs of its own. */
export function toSandboxStatus(s: CriPodSandboxStatus): RuntimeSandboxStatus {
  const hostNetwork = s.linux?.namespaces?.options?.network === NamespaceMode.NODE;
  const ips = determinePodSandboxIPs(s);
  return {
    id: s.id,
    name: s.metadata?.name ?? '',
    namespace: s.metadata?.namespace ?? '',
    uid: s.metadata?.uid ?? '',
    attempt: s.metadata?.attempt ?? 0,
    state: s.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready',
    createdAt: nsToMs(s.createdAt),
    ips: hostNetwork ? [] : ips,
    hostNetwork,
    labels: s.labels,
    annotations: s.annotations,
  };
}

/** A pod's IPs: its newest sandbox's, while that sandbox is ready. */
export function podIPsOf(newest: RuntimeSandboxStatus | undefined): readonly string[] {
  return newest?.state === 'ready' ? newest.ips : [];
}
