import fs from 'node:fs/promises';
import path from 'node:path';
import type { HostAlias, Pod } from '@kubelet-kit/core';
import { type Mount, MountPropagation, type PartialMessage } from '@kubelet-kit/cri';

// The kubelet-managed /etc/hosts of a pod (upstream `kubelet_pods.go` makeHostsMount and
// ensureHostsFile): kept under the pod's directory and mounted into each container.

const managedHostsHeader = '# Kubernetes-managed hosts file.\n';
const managedHostsHeaderWithHostNetwork = '# Kubernetes-managed hosts file (host network).\n';

function hostAliasLines(aliases: readonly HostAlias[] | undefined): string {
  if (!aliases || aliases.length === 0) return '';
  let out = '\n# Entries added by HostAliases.\n';
  for (const a of aliases) out += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  return out;
}

/** The content of a pod's hosts file (for host-network pods, `nodeHosts` is the node's file). */
export function managedHostsFileContent(
  podIPs: readonly string[],
  hostname: string,
  domain: string,
  aliases: readonly HostAlias[] | undefined,
  hostNetwork: boolean,
  nodeHosts = '',
): string {
  if (hostNetwork) return managedHostsHeaderWithHostNetwork + nodeHosts + hostAliasLines(aliases);
  let out = managedHostsHeader;
  out += '127.0.0.1\tlocalhost\n';
  out += '::1\tlocalhost ip6-localhost ip6-loopback\n';
  out += 'fe00::0\tip6-localnet\n';
  out += 'fe00::0\tip6-mcastprefix\n';
  out += 'fe00::1\tip6-allnodes\n';
  out += 'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs)
    out += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + hostAliasLines(aliases);
}

/** Options of `makeHostsMount`. @internal */
export interface HostsMountOptions {
  readonly podDir: string;
  readonly podIPs: readonly string[];
  readonly clusterDomain?: string;
  /** The node's hosts file, copied for host-network pods. Default `/etc/hosts`. */
  readonly nodeHostsFile?: string;
}

/**
 * The /etc/hosts mount of a container, or undefined when upstream would not mount one: before
 * the pod has an IP, or when the container mounts /etc/hosts itself. The file is written afresh
 * at every container start, as upstream's ensureHostsFile does, so a new sandbox's IPs reach it.
 */
export async function makeHostsMount(
  pod: Pod,
  mountsEtcHosts: boolean,
  o: HostsMountOptions,
): Promise<PartialMessage<Mount> | undefined> {
  if (mountsEtcHosts || o.podIPs.length === 0) return undefined;
  const file = path.join(o.podDir, 'etc-hosts');
  const hostname = (pod.spec?.hostname || pod.metadata?.name || '').slice(0, 63).replace(/[-.]+$/, '');
  const sub = pod.spec?.subdomain;
  const domain = sub ? `${sub}.${pod.metadata?.namespace ?? 'default'}.svc.${o.clusterDomain ?? ''}` : '';
  const hostNetwork = pod.spec?.hostNetwork === true;
  const nodeHosts = hostNetwork ? await readOrEmpty(o.nodeHostsFile ?? '/etc/hosts') : '';
  await fs.mkdir(o.podDir, { recursive: true, mode: 0o750 });
  await fs.writeFile(
    file,
    managedHostsFileContent(o.podIPs, hostname, domain, pod.spec?.hostAliases, hostNetwork, nodeHosts),
    { mode: 0o644 },
  );
  // The umask may have narrowed the mode; every user in the container must read the file.
  await fs.chmod(file, 0o644);
  return {
    containerPath: '/etc/hosts',
    hostPath: file,
    readonly: false,
    selinuxRelabel: true,
    propagation: MountPropagation.PROPAGATION_PRIVATE,
  };
}

async function readOrEmpty(file: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return '';
  }
}
