import path from 'node:path';
import type { ContainerPort, Pod } from '@kubelet-kit/core';
import {
  type LinuxPodSandboxConfig,
  NamespaceMode,
  type NamespaceOption,
  type PartialMessage,
  type PodSandboxConfig,
  type PortMapping,
  Protocol,
  SecurityProfile_ProfileType,
  SupplementalGroupsPolicy,
  type UserNamespace,
} from '@kubelet-kit/cri';
import { DNSConfigurer, type DNSOptions } from './dns.js';
import { newPodAnnotations, newPodLabels } from './labels.js';

// The pod sandbox config (upstream `kuberuntime_sandbox.go`, `pkg/kubelet/network/dns`).

/** Where pod logs live by default. */
export const defaultPodLogsRootDirectory = '/var/log/pods';

/** `<root>/<ns>_<name>_<uid>`. */
export function buildPodLogsDirectory(root: string, namespace: string, name: string, uid: string): string {
  return path.join(root, `${namespace}_${name}_${uid}`);
}

/** `<podLogDir>/<container>`. */
export function buildContainerLogsDirectory(
  root: string,
  namespace: string,
  name: string,
  uid: string,
  containerName: string,
): string {
  return path.join(buildPodLogsDirectory(root, namespace, name, uid), containerName);
}

const maxFQDNLength = 64;

/**
 * The pod's hostname: spec.hostname or the pod name, at most 63 characters; with FQDN, plus the
 * domain `<subdomain>.<ns>.svc.<clusterDomain>` (upstream's, a trailing dot without a cluster domain).
 */
export function generatePodHostname(pod: Pod, clusterDomain = ''): string {
  let hostname = (pod.spec?.hostname || pod.metadata?.name || '').slice(0, 63).replace(/[-.]+$/, '');
  const sub = pod.spec?.subdomain;
  if (sub && pod.spec?.setHostnameAsFQDN) {
    hostname = `${hostname}.${sub}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}`;
  }
  return hostname;
}

function protocolOf(p: string | undefined): Protocol {
  if (p === 'UDP') return Protocol.UDP;
  if (p === 'SCTP') return Protocol.SCTP;
  return Protocol.TCP;
}

/** Port mappings of all containers, a port named twice in one container counted once. */
export function makePortMappings(pod: Pod): PortMapping[] {
  const out: PortMapping[] = [];
  for (const c of pod.spec?.containers ?? []) {
    const names = new Set<string>();
    for (const p of c.ports ?? ([] as ContainerPort[])) {
      const family = !p.hostIP ? 'any' : p.hostIP.includes(':') ? 'v6' : 'v4';
      const name =
        p.name || `${family}-${p.protocol ?? 'TCP'}-${p.hostIP ?? ''}:${p.containerPort}:${p.hostPort ?? 0}`;
      if (names.has(name)) continue;
      names.add(name);
      out.push({
        protocol: protocolOf(p.protocol),
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      });
    }
  }
  return out;
}

/**
 * Network, PID, IPC and user namespaces of the pod (upstream `NamespacesForPod`); the user
 * namespace as `UserNamespaceManager` gave it, else the node's.
 */
export function namespacesForPod(
  pod: Pod,
  usernsOptions?: PartialMessage<UserNamespace>,
): PartialMessage<NamespaceOption> {
  const spec = pod.spec;
  return {
    usernsOptions: usernsOptions ?? { mode: NamespaceMode.NODE, uids: [], gids: [] },
    network: spec?.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: spec?.hostPID
      ? NamespaceMode.NODE
      : spec?.shareProcessNamespace
        ? NamespaceMode.POD
        : NamespaceMode.CONTAINER,
    ipc: spec?.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
    targetId: '',
  };
}

/** Options of {@link generatePodSandboxConfig}. @internal */
export interface SandboxConfigOptions extends DNSOptions {
  readonly podLogsRootDirectory: string;
  readonly cgroupParent: string;
  /** The pod's user namespace (see `UserNamespaceManager`); omitted: the node's. */
  readonly usernsOptions?: PartialMessage<UserNamespace>;
  /** The manager's DNS configurer (with its event recorder); omitted: one from the DNS options. */
  readonly dnsConfigurer?: DNSConfigurer;
}

/**
 * The pod's `securityContext.supplementalGroupsPolicy` in CRI form; undefined when unset. Upstream's API validation admits only Merge and Strict.
 * @internal
 */
export function supplementalGroupsPolicyOf(pod: Pod): SupplementalGroupsPolicy | undefined {
  const policy = pod.spec?.securityContext?.supplementalGroupsPolicy;
  if (policy === undefined || policy === null) return undefined;
  if (policy === 'Merge') return SupplementalGroupsPolicy.Merge;
  if (policy === 'Strict') return SupplementalGroupsPolicy.Strict;
  throw new Error(`unsupported supplementalGroupsPolicy: ${JSON.stringify(policy)}`);
}

function hasPrivilegedContainer(pod: Pod): boolean {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.some((c) => c.securityContext?.privileged === true);
}

/** The Linux part of the sandbox config. */
export function generatePodSandboxLinuxConfig(
  pod: Pod,
  cgroupParent: string,
  usernsOptions?: PartialMessage<UserNamespace>,
): PartialMessage<LinuxPodSandboxConfig> {
  const sc = pod.spec?.securityContext;
  const sysctls: Record<string, string> = {};
  for (const s of sc?.sysctls ?? []) sysctls[s.name] = s.value;
  const supplementalGroups: number[] = [];
  if (sc?.fsGroup !== undefined && sc.fsGroup !== null) supplementalGroups.push(sc.fsGroup);
  supplementalGroups.push(...(sc?.supplementalGroups ?? []));
  const policy = supplementalGroupsPolicyOf(pod);
  return {
    cgroupParent,
    sysctls,
    securityContext: {
      privileged: hasPrivilegedContainer(pod),
      // The sandbox always runs under the runtime's default seccomp profile, as upstream.
      seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
      namespaceOptions: namespacesForPod(pod, usernsOptions),
      ...(policy !== undefined ? { supplementalGroupsPolicy: policy } : {}),
      ...(sc?.runAsUser !== undefined && sc.runAsUser !== null ? { runAsUser: { value: sc.runAsUser } } : {}),
      ...(sc?.runAsGroup !== undefined && sc.runAsGroup !== null
        ? { runAsGroup: { value: sc.runAsGroup } }
        : {}),
      supplementalGroups,
    },
  };
}

/** The CRI sandbox config of a pod (upstream `generatePodSandboxConfig`). @internal */
export function generatePodSandboxConfig(
  pod: Pod,
  attempt: number,
  options: SandboxConfigOptions,
): PartialMessage<PodSandboxConfig> {
  const m = pod.metadata ?? {};
  const config: PartialMessage<PodSandboxConfig> = {
    metadata: { name: m.name ?? '', namespace: m.namespace ?? '', uid: m.uid ?? '', attempt },
    labels: newPodLabels(pod),
    annotations: newPodAnnotations(pod),
    dnsConfig: (options.dnsConfigurer ?? new DNSConfigurer(options)).getPodDNS(pod),
    logDirectory: buildPodLogsDirectory(
      options.podLogsRootDirectory,
      m.namespace ?? '',
      m.name ?? '',
      m.uid ?? '',
    ),
    portMappings: makePortMappings(pod),
    linux: generatePodSandboxLinuxConfig(pod, options.cgroupParent, options.usernsOptions),
  };
  // Host-network pods keep the node's hostname.
  if (!pod.spec?.hostNetwork) {
    const hostname = generatePodHostname(pod, options.clusterDomain);
    // The kernel's nodename holds 64 characters: a longer FQDN cannot be set, so there is no
    // sandbox for this pod (upstream GetNodenameForKernel). Only an FQDN can be that long.
    if (hostname.length > maxFQDNLength) {
      throw new Error(
        `failed to construct FQDN from pod hostname and cluster domain, FQDN ${hostname} is too long (${maxFQDNLength} characters is the max, ${hostname.length} characters requested)`,
      );
    }
    config.hostname = hostname;
  }
  return config;
}
