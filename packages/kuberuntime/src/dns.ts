import fs from 'node:fs';
import net from 'node:net';
import {
  type EventObjectRef,
  type EventRecorder,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  type PodDNSConfig,
  podEventReference,
} from '@kubelet-kit/core';
import type { DNSConfig } from '@kubelet-kit/cri';
import { podDesc } from './helpers.js';

// The pod's resolver configuration (upstream `pkg/kubelet/network/dns/dns.go`, the Configurer):
// the node's resolv.conf as the base, the pod's dnsPolicy choosing what replaces it, the pod's
// dnsConfig appended, and the result cut down to what resolvers accept.

/** At most this many nameservers (upstream validation.MaxDNSNameservers, from glibc). @internal */
export const MaxDNSNameservers = 3;
/** At most this many search domains (upstream validation.MaxDNSSearchPaths, ExpandedDNSConfig GA). @internal */
export const MaxDNSSearchPaths = 32;
/** The search line at most this long, spaces included (upstream validation.MaxDNSSearchListChars). @internal */
export const MaxDNSSearchListChars = 2048;
/** Longer search domains make some resolvers abort (glibc 2.28): they are dropped. */
const DNS1123SubdomainMaxLength = 253;
/** upstream maxResolveConfLength: a larger file is an error, not read. */
const maxResolvConfLength = 10 << 20;
const defaultDNSOptions = ['ndots:5'];

/** How pod DNS is configured (upstream kubelet `clusterDNS`, `clusterDomain`, `resolvConf`). @public */
export interface DNSOptions {
  /** The cluster DNS servers' IPs for ClusterFirst pods; none: ClusterFirst falls back to Default. */
  readonly clusterDNS?: readonly string[];
  /** The cluster's DNS domain; default empty (upstream's): no cluster search domains. */
  readonly clusterDomain?: string;
  /** The host's resolv.conf, the base of every pod's; empty string: none. Default `/etc/resolv.conf`. */
  readonly resolvConf?: string;
}

/** Options of {@link DNSConfigurer}. @internal */
export interface DNSConfigurerOptions extends DNSOptions {
  /** Where DNSConfigForming, MissingClusterDNS and CheckLimitsForResolvConf warnings go. */
  readonly recorder?: EventRecorder;
  readonly logger?: Logger;
  /** The node, for the node's events. */
  readonly nodeName?: string;
  /** The node's IPs: with no resolv.conf, host DNS points at the loopback of each one's family. */
  readonly nodeIPs?: readonly string[];
}

/** A resolv.conf's three lists (upstream parseResolvConf). @internal */
export interface ResolvConf {
  readonly nameservers: string[];
  readonly searches: string[];
  readonly options: string[];
}

/**
 * Parses resolv.conf text as upstream's kubelet does: `nameserver` lines accumulate, the last
 * `search` and the last `options` line win, a line whose first non-blank is `#` is a comment. A
 * search domain's trailing dot is dropped (so `a.` and `a` count once), except a lone `.`. A
 * `nameserver` line without an address is an error (after the whole file is read).
 * @internal
 */
export function parseResolvConf(text: string): ResolvConf {
  const out: ResolvConf = { nameservers: [], searches: [], options: [] };
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    if (fields.length === 0) continue;
    const [key, ...rest] = fields;
    if (key === 'nameserver') {
      if (rest.length > 0) out.nameservers.push(rest[0]!);
      else errors.push('nameserver list is empty ');
    } else if (key === 'search') {
      out.searches.splice(0, out.searches.length, ...rest.map((s) => (s === '.' ? s : s.replace(/\.$/, ''))));
    } else if (key === 'options') {
      out.options.splice(0, out.options.length, ...rest);
    }
  }
  if (errors.length === 1) throw new Error(errors[0]);
  if (errors.length > 1) throw new Error(`[${errors.join(', ')}]`);
  return out;
}

/** Go's wording for the usual open errors, as upstream's events show them. */
function openErrorMessage(file: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const reason =
    code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied'
        : code === 'EISDIR'
          ? 'is a directory'
          : err instanceof Error
            ? err.message
            : String(err);
  return `open ${file}: ${reason}`;
}

/** Reads and parses a resolv.conf; an unreadable, oversized or malformed one is an error. @internal */
export function readResolvConf(file: string): ResolvConf {
  let text: string;
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    throw new Error(openErrorMessage(file, err), { cause: err });
  }
  try {
    // Read to the end (a size from stat may be 0 for special files), at most the limit.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const r = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (r === 0) break;
      total += r;
      if (total > maxResolvConfLength) throw new Error('the read limit is reached');
      chunks.push(chunk.subarray(0, r));
    }
    text = Buffer.concat(chunks).toString('utf8');
  } catch (err) {
    throw new Error(`read ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  } finally {
    fs.closeSync(fd);
  }
  return parseResolvConf(text);
}

function omitDuplicates(xs: readonly string[]): string[] {
  return [...new Set(xs)];
}

/**
 * Merges the pod's dnsConfig options into the base ones (upstream mergeDNSOptions): one entry per
 * option name, the pod's value winning; `name:value`, or `name` when the value is empty. The order
 * is the base's, then new names (upstream's is a map's, unordered).
 * @internal
 */
export function mergeDNSOptions(existing: readonly string[], extra: PodDNSConfig['options']): string[] {
  const byName = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(':');
    if (i >= 0) byName.set(op.slice(0, i), op.slice(i + 1));
    else byName.set(op, '');
  }
  for (const op of extra ?? []) byName.set(op.name ?? '', op.value ?? '');
  return [...byName].map(([name, value]) => (value !== '' ? `${name}:${value}` : name));
}

/** The pod's dnsConfig appended to a base config, duplicates dropped (upstream appendDNSConfig). */
function appendDNSConfig(base: DNSConfig, extra: PodDNSConfig): DNSConfig {
  return {
    servers: omitDuplicates([...base.servers, ...(extra.nameservers ?? [])]),
    searches: omitDuplicates([...base.searches, ...(extra.searches ?? [])]),
    options: mergeDNSOptions(base.options, extra.options),
  };
}

/** Which base a pod's DNS starts from. @internal */
export type PodDNSType = 'cluster' | 'host' | 'none';

/**
 * The base of a pod's DNS from its dnsPolicy (upstream getPodDNSType). ClusterFirst on the host
 * network is Default. An unset policy reads as the API's default, ClusterFirst; an unknown one is
 * an error (the API server rejects it).
 * @internal
 */
export function getPodDNSType(pod: Pod): PodDNSType {
  const policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  switch (policy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      return pod.spec?.hostNetwork === true ? 'host' : 'cluster';
    case 'Default':
      return 'host';
  }
  throw new Error(`invalid DNSPolicy=${policy}`);
}

/** An IP as Go's net.IP String() writes it (IPv6 lower-cased and compressed). */
function canonicalIP(ip: string): string {
  return net.isIPv6(ip) ? new URL(`http://[${ip}]/`).hostname.slice(1, -1) : ip;
}

/**
 * Sets up the resolver configuration of pod sandboxes (upstream `dns.Configurer`).
 * @internal
 */
export class DNSConfigurer {
  readonly #recorder: EventRecorder;
  readonly #logger: Logger;
  readonly #nodeRef: EventObjectRef;
  readonly #nodeIPs: readonly string[];
  readonly #clusterDNS: readonly string[];
  /** The last resolv.conf read, with the stat it was read under. */
  #resolvConf: { readonly key: string; readonly conf: ResolvConf } | undefined;
  /** The cluster domain; empty: no cluster search domains. */
  readonly clusterDomain: string;
  /** The host's resolv.conf; empty: none. */
  readonly resolverConfig: string;

  constructor(options: DNSConfigurerOptions = {}) {
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#logger = options.logger ?? noopLogger;
    this.#nodeRef = { kind: 'Node', name: options.nodeName ?? '' };
    this.#nodeIPs = options.nodeIPs ?? [];
    // As upstream's NewMainKubelet: an entry that is not an IP is logged and left out.
    const clusterDNS: string[] = [];
    for (const ip of options.clusterDNS ?? []) {
      if (net.isIP(ip) === 0) this.#logger.info({ IP: ip }, 'Invalid clusterDNS IP');
      else clusterDNS.push(canonicalIP(ip));
    }
    this.#clusterDNS = clusterDNS;
    this.clusterDomain = options.clusterDomain ?? '';
    this.resolverConfig = options.resolvConf ?? '/etc/resolv.conf';
  }

  /** The cluster search domains before the host's, or the host's alone without a cluster domain. */
  #searchesForClusterFirst(hostSearch: readonly string[], pod: Pod): string[] {
    if (this.clusterDomain === '') return [...hostSearch];
    const d = this.clusterDomain;
    const ns = pod.metadata?.namespace ?? '';
    return omitDuplicates([`${ns}.svc.${d}`, `svc.${d}`, d, ...hostSearch]);
  }

  /**
   * The search list cut to what resolvers take: at most 32 domains, none longer than 253
   * characters, 2048 characters in all (the last domains go). A cut is a DNSConfigForming warning.
   */
  formDNSSearchFitsLimits(composed: readonly string[], pod: Pod): string[] {
    let exceeded = false;
    let search = [...composed];
    if (search.length > MaxDNSSearchPaths) {
      search = search.slice(0, MaxDNSSearchPaths);
      exceeded = true;
    }
    const fitting = search.filter((s) => s.length <= DNS1123SubdomainMaxLength);
    if (fitting.length !== search.length) exceeded = true;
    search = fitting;
    const lineLength = search.join(' ').length;
    if (lineLength > MaxDNSSearchListChars) {
      let cutLength = 0;
      let cut = 0;
      for (let i = search.length - 1; i >= 0; i--) {
        cutLength += search[i]!.length + 1;
        cut++;
        if (lineLength - cutLength <= MaxDNSSearchListChars) break;
      }
      search = search.slice(0, search.length - cut);
      exceeded = true;
    }
    if (exceeded) {
      const message = `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${search.join(' ')}`;
      this.#recorder.event(podEventReference(pod), 'Warning', 'DNSConfigForming', message);
      this.#logger.error({ pod: podDesc(pod) }, `Search Line limits exceeded: ${message}`);
    }
    return search;
  }

  /** At most three nameservers, the first ones; a cut is a DNSConfigForming warning. */
  formDNSNameserversFitsLimits(nameservers: readonly string[], pod: Pod): string[] {
    if (nameservers.length <= MaxDNSNameservers) return [...nameservers];
    const kept = nameservers.slice(0, MaxDNSNameservers);
    const message = `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${kept.join(' ')}`;
    this.#recorder.event(podEventReference(pod), 'Warning', 'DNSConfigForming', message);
    this.#logger.error({ pod: podDesc(pod) }, `Nameserver limits exceeded: ${message}`);
    return kept;
  }

  /**
   * The host's DNS settings: the resolv.conf's, or nothing without one. Upstream reads the file
   * for every pod; this reads it again only when a stat says it changed (identity, size, times),
   * which is one system call per pod instead of four and a parse.
   */
  #hostDNSConfig(): DNSConfig {
    if (this.resolverConfig === '') return { servers: [], searches: [], options: [] };
    const st = fs.statSync(this.resolverConfig, { bigint: true, throwIfNoEntry: false });
    // Only a regular file's stat tells its content changed; anything else is read every time.
    const key = st?.isFile() ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : undefined;
    let r = key !== undefined && this.#resolvConf?.key === key ? this.#resolvConf.conf : undefined;
    if (!r) {
      r = readResolvConf(this.resolverConfig);
      this.#resolvConf = key !== undefined ? { key, conf: r } : undefined;
    }
    return { servers: [...r.nameservers], searches: [...r.searches], options: [...r.options] };
  }

  /**
   * The pod's sandbox DNS config (upstream GetPodDNS). The host's resolv.conf is read every
   * time, so it must be readable and well formed whatever the policy (else this throws, and the
   * sandbox is not created).
   */
  getPodDNS(pod: Pod): DNSConfig {
    let cfg = this.#hostDNSConfig();
    let type: PodDNSType;
    try {
      type = getPodDNSType(pod);
    } catch (err) {
      this.#logger.error(
        { err, pod: podDesc(pod) },
        'Failed to get DNS type for pod. Falling back to DNSClusterFirst policy.',
      );
      type = 'cluster';
    }
    if (type === 'none') {
      cfg = { servers: [], searches: [], options: [] };
    } else if (type === 'cluster' && this.#clusterDNS.length > 0) {
      // The cluster DNS server is the pod's only nameserver: it forwards what it cannot answer.
      cfg = {
        servers: [...this.#clusterDNS],
        searches: this.#searchesForClusterFirst(cfg.searches, pod),
        options: [...defaultDNSOptions],
      };
    } else {
      if (type === 'cluster') {
        const msg =
          'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
        this.#recorder.event(this.#nodeRef, 'Warning', 'MissingClusterDNS', msg);
        this.#recorder.event(
          podEventReference(pod),
          'Warning',
          'MissingClusterDNS',
          `pod: ${JSON.stringify(podDesc(pod))}. ${msg}`,
        );
      }
      if (this.resolverConfig === '') {
        // No resolv.conf: the resolver library's default, the local nameserver, and no search.
        const servers = this.#nodeIPs.map((ip) => (net.isIPv6(ip) ? '::1' : '127.0.0.1'));
        cfg = {
          servers: servers.length > 0 ? servers : ['127.0.0.1'],
          searches: ['.'],
          options: cfg.options,
        };
      }
    }
    const extra = pod.spec?.dnsConfig;
    if (extra) cfg = appendDNSConfig(cfg, extra);
    return {
      servers: this.formDNSNameserversFitsLimits(cfg.servers, pod),
      searches: this.formDNSSearchFitsLimits(cfg.searches, pod),
      options: cfg.options,
    };
  }

  /**
   * Warns (a CheckLimitsForResolvConf event on the node) when the host's resolv.conf cannot be
   * read or its search line would not fit a ClusterFirst pod's (upstream runs it once as its sync
   * loop starts). Nothing without a resolv.conf.
   */
  checkLimitsForResolvConf(): void {
    if (this.resolverConfig === '') return;
    const warn = (message: string) => {
      this.#recorder.event(this.#nodeRef, 'Warning', 'CheckLimitsForResolvConf', message);
      this.#logger.debug({ eventlog: message }, 'Check limits for resolv.conf failed');
    };
    let hostSearch: string[];
    try {
      hostSearch = readResolvConf(this.resolverConfig).searches;
    } catch (err) {
      warn(err instanceof Error ? err.message : String(err));
      return;
    }
    // The cluster search domains take three of the places.
    const domainCountLimit = this.clusterDomain !== '' ? MaxDNSSearchPaths - 3 : MaxDNSSearchPaths;
    const file = this.resolverConfig;
    if (hostSearch.length > domainCountLimit) {
      warn(
        `Resolv.conf file '${file}' contains search line consisting of more than ${domainCountLimit} domains!`,
      );
      return;
    }
    if (hostSearch.some((s) => s.length > DNS1123SubdomainMaxLength)) {
      warn(
        `Resolv.conf file ${JSON.stringify(file)} contains a search path which length is more than allowed ${DNS1123SubdomainMaxLength} chars!`,
      );
      return;
    }
    if (hostSearch.join(' ').length > MaxDNSSearchListChars) {
      warn(
        `Resolv.conf file '${file}' contains search line which length is more than allowed ${MaxDNSSearchListChars} chars!`,
      );
    }
  }
}
