#!/usr/bin/env node
// First: V8 tuning for the agent process, before the other modules run.
import './apply-v8-tuning.js';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { type Logger, type Pod, quantityValue } from '@kubelet-kit/core';
import { Command, InvalidArgumentError, Option } from 'commander';
import { pino } from 'pino';
import { type AgentOptions, createAgent } from './agent.js';
import { parseFeatureGates, unknownFeatureGates } from './feature-gates.js';
import { applyKubeletConfig, type KubeletConfig, loadKubeletConfig } from './kubelet-config.js';
import { lineBatchingDestination } from './log-destination.js';
import { type NodeTaint, parseNodeLabels, parseTaints } from './node-info.js';
import { parseResourceListFlag } from './node-status.js';
import { formatPodTable } from './pod-table.js';
import type { KubeletAuthorizationMode } from './server-auth.js';
import type { KubeletAuthenticationOptions, KubeletAuthorizationOptions } from './server-security.js';
import type { KubeletTlsOptions } from './server-tls.js';
import { simulateCommand } from './simulate-command.js';

function int(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new InvalidArgumentError(`${name} must be a whole number, got ${JSON.stringify(value)}`);
    return n;
  };
}

function featureGatesFlag(value: string): Record<string, boolean> {
  let gates: Record<string, boolean>;
  try {
    gates = parseFeatureGates(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  for (const gate of unknownFeatureGates(gates))
    process.stderr.write(`kubelet-kit run: feature gate ${gate} is not used by this agent; ignoring it\n`);
  return gates;
}

/**
 * A map flag as upstream's `--eviction-hard` (`LangleSeparatedMapStringString`: `k<v,k<v`) or
 * `--eviction-soft-grace-period` (`MapStringString`: `k=v,k=v`); repeated flags add up.
 */
function mapFlag(flag: string, sep: '<' | '=') {
  return (value: string, previous: Record<string, string> | undefined): Record<string, string> => {
    const out = { ...previous };
    for (const item of value.split(',')) {
      const entry = item.trim();
      if (entry === '') continue;
      const i = entry.indexOf(sep);
      if (i <= 0)
        throw new InvalidArgumentError(
          `${flag}: malformed pair ${JSON.stringify(entry)}, expected "key${sep}value"`,
        );
      out[entry.slice(0, i).trim()] = entry.slice(i + 1).trim();
    }
    return out;
  };
}

/** Go-style durations as the kubelet flags take them: `20s`, `1m`, `500ms`, `1m30s`. */
function duration(value: string): number {
  // Go's time.ParseDuration takes a bare 0.
  if (value === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let consumed = 0;
  for (const m of value.matchAll(re)) {
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    consumed += m[0].length;
  }
  if (consumed !== value.length || value.length === 0) {
    throw new InvalidArgumentError(`invalid duration ${JSON.stringify(value)} (use e.g. 20s, 1m, 500ms)`);
  }
  return total;
}

/**
 * The node IPs of `--node-ip`: one IP, or a dual-stack pair, comma-separated (upstream's
 * `ParseNodeIPArgument`); values that are not IPs are ignored with a warning, as upstream does.
 */
function parseNodeIPs(values: readonly string[]): string[] {
  const ips: string[] = [];
  for (const ip of values.flatMap((v) => v.split(',')).map((v) => v.trim())) {
    if (ip === '') continue;
    if (net.isIP(ip) === 0)
      process.stderr.write(`kubelet-kit run: could not parse node IP ${JSON.stringify(ip)}; ignoring it\n`);
    else ips.push(ip);
  }
  if (ips.length > 2 || (ips.length === 2 && net.isIPv6(ips[0]!) === net.isIPv6(ips[1]!))) {
    throw new InvalidArgumentError('--node-ip must contain either a single IP or a dual-stack pair of IPs');
  }
  if (ips.length === 2 && ips.some((ip) => ip === '0.0.0.0' || ip === '::')) {
    throw new InvalidArgumentError("dual-stack --node-ip cannot include '0.0.0.0' or '::'");
  }
  return ips;
}

interface RunFlags {
  config?: string;
  podManifestPath?: string;
  manifestUrl?: string;
  containerRuntimeEndpoint: string;
  hostnameOverride?: string;
  rootDir: string;
  maxPods: number;
  kubeconfig?: string;
  address: string;
  port: number;
  objectDir?: string;
  offlineStoreDir?: string;
  runtimeClasses?: string;
  allowStaticPodApiReferences?: boolean;
  podLogsDir?: string;
  syncFrequency?: number;
  fileCheckFrequency?: number;
  nodeIp?: string[];
  maxConcurrentSyncs?: number;
  maxConcurrentPodCreations?: number;
  maxConcurrentCreationCalls?: number;
  allowedUnsafeSysctls?: string[];
  nodeLabels?: string[];
  registerWithTaints?: string[];
  extendedResources?: string[];
  clusterDns?: string[];
  clusterDomain?: string;
  resolvConf: string;
  eventQps?: number;
  eventBurst?: number;
  nodeLeaseDurationSeconds?: number;
  // Feature gates.
  featureGates?: Record<string, boolean>;
  // Images.
  imageGcHighThreshold?: number;
  imageGcLowThreshold?: number;
  imageMinimumGcAge?: number;
  imageMaximumGcAge?: number;
  imageGcPeriod?: number;
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  registryQps?: number;
  registryBurst?: number;
  // Node registration and status.
  registerNode: boolean;
  nodeStatusUpdateFrequency?: number;
  nodeStatusReportFrequency?: number;
  systemReserved?: string[];
  kubeReserved?: string[];
  // Pod cgroups.
  cgroupsPerQos?: boolean;
  cgroupDriver?: string;
  cgroupRoot?: string;
  podMaxPids?: number;
  enforceNodeAllocatable?: string[];
  // Eviction.
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, string>;
  evictionMinimumReclaim?: Record<string, string>;
  evictionPressureTransitionPeriod?: number;
  evictionMaxPodGracePeriod?: number;
  evictionMonitoringPeriod?: number;
  // Container log rotation.
  containerLogMaxSize?: number;
  containerLogMaxFiles?: number;
  containerLogMaxWorkers?: number;
  containerLogMonitorInterval?: number;
  logLevel: string;
  logFile?: string;
  table: boolean;
  // The kubelet API's transport and auth.
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir?: string;
  tlsMinVersion?: string;
  tlsCipherSuites?: string[];
  clientCaFile?: string;
  anonymousAuth?: boolean;
  authenticationTokenWebhook?: boolean;
  authenticationTokenWebhookCacheTtl?: number;
  authorizationMode?: string;
  authorizationWebhookCacheAuthorizedTtl?: number;
  authorizationWebhookCacheUnauthorizedTtl?: number;
  readOnlyPort?: number;
}

/** --cgroup-driver: one of the drivers pod cgroups have. */
function cgroupDriverFlag(v: string): 'cgroupfs' | 'systemd' {
  if (v === 'cgroupfs' || v === 'systemd') return v;
  throw new Error(`--cgroup-driver: ${JSON.stringify(v)} is not one of cgroupfs, systemd`);
}

/** `name=count,...` of --extended-resources: extended resource names with whole counts. */
function parseExtendedResources(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of values.flatMap((v) => v.split(',')).map((v) => v.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    const name = item.slice(0, eq);
    const count = Number(item.slice(eq + 1));
    if (eq <= 0 || !name.includes('/') || !Number.isInteger(count) || count < 0) {
      throw new InvalidArgumentError(
        `--extended-resources: ${JSON.stringify(item)} is not <domain>/<name>=<whole number>`,
      );
    }
    out[name] = count;
  }
  return out;
}

/** A Go boolean flag value (`--register-node=false`); a bare flag is true. */
function bool(name: string) {
  return (value: string | undefined): boolean => {
    if (value === undefined || value === 'true' || value === '1' || value === 't' || value === 'T')
      return true;
    if (value === 'false' || value === '0' || value === 'f' || value === 'F') return false;
    throw new InvalidArgumentError(`${name} must be true or false, got ${JSON.stringify(value)}`);
  };
}

/** The TLS, authentication and authorization flags as AgentOptions (only those given). */
function serverSecurityOptions(flags: RunFlags): Partial<AgentOptions> {
  const defined = <T extends object>(o: { [K in keyof T]: T[K] | undefined }): T =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  const serverTls = defined<KubeletTlsOptions>({
    certFile: flags.tlsCertFile,
    privateKeyFile: flags.tlsPrivateKeyFile,
    certDirectory: flags.certDir,
    clientCAFile: flags.clientCaFile,
    minVersion: flags.tlsMinVersion,
    cipherSuites: flags.tlsCipherSuites
      ?.flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean),
  });
  const authentication = defined<KubeletAuthenticationOptions>({
    anonymous: flags.anonymousAuth,
    webhook: flags.authenticationTokenWebhook,
    webhookCacheTtlMs: flags.authenticationTokenWebhookCacheTtl,
  });
  const mode = flags.authorizationMode;
  if (mode !== undefined && mode !== 'AlwaysAllow' && mode !== 'Webhook')
    throw new InvalidArgumentError(
      `--authorization-mode must be AlwaysAllow or Webhook, got ${JSON.stringify(mode)}`,
    );
  const authorization = defined<KubeletAuthorizationOptions>({
    mode: mode as KubeletAuthorizationMode | undefined,
    cacheAuthorizedTtlMs: flags.authorizationWebhookCacheAuthorizedTtl,
    cacheUnauthorizedTtlMs: flags.authorizationWebhookCacheUnauthorizedTtl,
  });
  return {
    ...(Object.keys(serverTls).length ? { serverTls } : {}),
    ...(Object.keys(authentication).length ? { authentication } : {}),
    ...(Object.keys(authorization).length ? { authorization } : {}),
    ...(flags.readOnlyPort ? { readOnlyPort: flags.readOnlyPort } : {}),
  };
}

/** A bad `run` flag: said on standard error, exit code 2 (as the kubelet's flag errors). */
function runUsageError(message: string): void {
  process.stderr.write(`kubelet-kit run: ${message}\n`);
  process.exitCode = 2;
}

async function run(flags: RunFlags, command: Command): Promise<void> {
  // --config: a KubeletConfiguration file; flags given on the command line win over it.
  const explicit = (flag: string) => command.getOptionValueSource(flag) === 'cli';
  let kubeletConfig: KubeletConfig | undefined;
  if (flags.config) {
    try {
      kubeletConfig = loadKubeletConfig(flags.config);
    } catch (err) {
      runUsageError((err as Error).message);
      return;
    }
    if (kubeletConfig.logLevel && !explicit('logLevel')) flags.logLevel = kubeletConfig.logLevel;
    // The kubelet API's TLS and auth fields fill the flags not given.
    for (const [flag, value] of Object.entries(kubeletConfig.server ?? {}))
      if (!explicit(flag)) (flags as unknown as Record<string, unknown>)[flag] = value;
  }
  const interactive = Boolean(process.stdout.isTTY) && flags.table;
  const logFile = flags.logFile ?? (interactive ? path.join(flags.rootDir, 'kubelet-kit.log') : undefined);
  if (logFile) fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const destination = logFile
    ? pino.destination({ dest: logFile, sync: false, mkdir: true })
    : lineBatchingDestination(1);
  // Logs are buffered (the file asynchronously, standard output per event-loop turn): what waits
  // is written out before exiting.
  const flushLogs = () => {
    try {
      destination.flushSync();
    } catch {
      // Not open yet, or the reader went away: nothing more to do.
    }
  };
  const logger = pino(
    { level: flags.logLevel, base: { pid: process.pid } },
    destination,
  ) as unknown as Logger;

  // The node name is the override trimmed and lowercased (upstream's GetHostname); blank is an error.
  const hostnameOverride = flags.hostnameOverride?.trim().toLowerCase();
  if (flags.hostnameOverride !== undefined && flags.hostnameOverride !== '' && !hostnameOverride) {
    runUsageError('--hostname-override: empty hostname is invalid');
    return;
  }
  let nodeIPs: string[];
  try {
    nodeIPs = parseNodeIPs(flags.nodeIp ?? []);
  } catch (err) {
    runUsageError((err as Error).message);
    return;
  }

  let nodeLabels: Record<string, string>;
  let taints: NodeTaint[];
  let extendedResources: Record<string, number>;
  let systemReserved: Record<string, string>;
  let kubeReserved: Record<string, string>;
  try {
    systemReserved = parseResourceListFlag('--system-reserved', flags.systemReserved ?? []);
    kubeReserved = parseResourceListFlag('--kube-reserved', flags.kubeReserved ?? []);
    nodeLabels = Object.assign({}, ...(flags.nodeLabels ?? []).map(parseNodeLabels));
    taints = parseTaints((flags.registerWithTaints ?? []).join(','));
    extendedResources = parseExtendedResources(flags.extendedResources ?? []);
  } catch (err) {
    runUsageError((err as Error).message);
    return;
  }
  const allowedUnsafeSysctls = (flags.allowedUnsafeSysctls ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');

  let agent: ReturnType<typeof createAgent>;
  try {
    let options: AgentOptions = {
      runtimeEndpoint: flags.containerRuntimeEndpoint,
      rootDirectory: flags.rootDir,
      maxPods: flags.maxPods,
      address: flags.address,
      port: flags.port,
      logger,
      ...(flags.podManifestPath ? { podManifestPath: flags.podManifestPath } : {}),
      ...(flags.manifestUrl ? { manifestUrl: flags.manifestUrl } : {}),
      ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}),
      ...(hostnameOverride ? { nodeName: hostnameOverride } : {}),
      ...(flags.objectDir ? { objectDirectory: flags.objectDir } : {}),
      ...(flags.offlineStoreDir ? { offlineStoreDirectory: flags.offlineStoreDir } : {}),
      ...(flags.runtimeClasses ? { runtimeClasses: flags.runtimeClasses } : {}),
      ...(flags.allowStaticPodApiReferences ? { allowStaticPodApiReferences: true } : {}),
      ...(flags.podLogsDir ? { podLogsDirectory: flags.podLogsDir } : {}),
      ...(flags.syncFrequency !== undefined ? { syncFrequencyMs: flags.syncFrequency } : {}),
      ...(flags.fileCheckFrequency !== undefined ? { fileCheckFrequencyMs: flags.fileCheckFrequency } : {}),
      ...(nodeIPs.length ? { nodeIPs } : {}),
      ...(flags.maxConcurrentSyncs ? { maxConcurrentSyncs: flags.maxConcurrentSyncs } : {}),
      ...(flags.maxConcurrentPodCreations
        ? { maxConcurrentPodCreations: flags.maxConcurrentPodCreations }
        : {}),
      ...(flags.maxConcurrentCreationCalls
        ? { maxConcurrentCreationCalls: flags.maxConcurrentCreationCalls }
        : {}),
      ...(allowedUnsafeSysctls.length ? { allowedUnsafeSysctls } : {}),
      ...(Object.keys(nodeLabels).length ? { nodeLabels } : {}),
      ...(taints.length ? { registerWithTaints: taints } : {}),
      ...(Object.keys(extendedResources).length ? { extendedResources } : {}),
      // Cluster DNS (upstream's flags): --cluster-dns is comma-separated and repeatable.
      clusterDNS: (flags.clusterDns ?? [])
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter(Boolean),
      ...(flags.clusterDomain !== undefined ? { clusterDomain: flags.clusterDomain } : {}),
      resolvConf: flags.resolvConf,
      // Node registration and status.
      registerNode: flags.registerNode,
      // The parsed IPs: upstream ignores unparsable --node-ip values with a warning.
      ...(nodeIPs.length ? { nodeIP: nodeIPs.join(',') } : {}),
      ...(flags.nodeStatusUpdateFrequency !== undefined
        ? { nodeStatusUpdateFrequencyMs: flags.nodeStatusUpdateFrequency }
        : {}),
      ...(flags.nodeStatusReportFrequency !== undefined
        ? { nodeStatusReportFrequencyMs: flags.nodeStatusReportFrequency }
        : {}),
      ...(Object.keys(systemReserved).length ? { systemReserved } : {}),
      ...(Object.keys(kubeReserved).length ? { kubeReserved } : {}),
      ...(flags.eventQps !== undefined ? { eventQPS: flags.eventQps } : {}),
      ...(flags.eventBurst !== undefined ? { eventBurst: flags.eventBurst } : {}),
      ...(flags.nodeLeaseDurationSeconds !== undefined
        ? { nodeLeaseDurationSeconds: flags.nodeLeaseDurationSeconds }
        : {}),
      // The kubelet API's transport and auth.
      ...serverSecurityOptions(flags),
      // Feature gates.
      ...(flags.featureGates !== undefined ? { featureGates: flags.featureGates } : {}),
      // Images.
      ...(flags.imageGcHighThreshold !== undefined
        ? { imageGCHighThresholdPercent: flags.imageGcHighThreshold }
        : {}),
      ...(flags.imageGcLowThreshold !== undefined
        ? { imageGCLowThresholdPercent: flags.imageGcLowThreshold }
        : {}),
      ...(flags.imageMinimumGcAge !== undefined ? { imageMinimumGCAgeMs: flags.imageMinimumGcAge } : {}),
      ...(flags.imageMaximumGcAge !== undefined ? { imageMaximumGCAgeMs: flags.imageMaximumGcAge } : {}),
      ...(flags.imageGcPeriod !== undefined ? { imageGCPeriodMs: flags.imageGcPeriod } : {}),
      ...(flags.serializeImagePulls !== undefined ? { serializeImagePulls: flags.serializeImagePulls } : {}),
      ...(flags.maxParallelImagePulls !== undefined
        ? { maxParallelImagePulls: flags.maxParallelImagePulls }
        : {}),
      ...(flags.registryQps !== undefined ? { registryPullQPS: flags.registryQps } : {}),
      ...(flags.registryBurst !== undefined ? { registryBurst: flags.registryBurst } : {}),
      // Pod cgroups (upstream pkg/kubelet/cm).
      ...(flags.cgroupsPerQos !== undefined ? { cgroupsPerQOS: flags.cgroupsPerQos } : {}),
      ...(flags.cgroupDriver !== undefined ? { cgroupDriver: cgroupDriverFlag(flags.cgroupDriver) } : {}),
      ...(flags.cgroupRoot !== undefined ? { cgroupRoot: flags.cgroupRoot } : {}),
      ...(flags.podMaxPids !== undefined ? { podPidsLimit: flags.podMaxPids } : {}),
      ...(flags.enforceNodeAllocatable !== undefined
        ? {
            enforceNodeAllocatable: flags.enforceNodeAllocatable
              .flatMap((v) => v.split(','))
              .map((v) => v.trim())
              .filter((v) => v !== '' && v !== 'none'),
          }
        : {}),
      // Eviction (upstream pkg/kubelet/eviction).
      ...(flags.evictionHard !== undefined ? { evictionHard: flags.evictionHard } : {}),
      ...(flags.evictionSoft !== undefined ? { evictionSoft: flags.evictionSoft } : {}),
      ...(flags.evictionSoftGracePeriod !== undefined
        ? { evictionSoftGracePeriod: flags.evictionSoftGracePeriod }
        : {}),
      ...(flags.evictionMinimumReclaim !== undefined
        ? { evictionMinimumReclaim: flags.evictionMinimumReclaim }
        : {}),
      ...(flags.evictionPressureTransitionPeriod !== undefined
        ? { evictionPressureTransitionPeriodMs: flags.evictionPressureTransitionPeriod }
        : {}),
      ...(flags.evictionMaxPodGracePeriod !== undefined
        ? { evictionMaxPodGracePeriod: flags.evictionMaxPodGracePeriod }
        : {}),
      ...(flags.evictionMonitoringPeriod !== undefined
        ? { evictionMonitoringPeriodMs: flags.evictionMonitoringPeriod }
        : {}),
      // Container log rotation.
      ...(flags.containerLogMaxSize !== undefined
        ? { containerLogMaxSizeBytes: flags.containerLogMaxSize }
        : {}),
      ...(flags.containerLogMaxFiles !== undefined
        ? { containerLogMaxFiles: flags.containerLogMaxFiles }
        : {}),
      ...(flags.containerLogMaxWorkers !== undefined
        ? { containerLogMaxWorkers: flags.containerLogMaxWorkers }
        : {}),
      ...(flags.containerLogMonitorInterval !== undefined
        ? { containerLogMonitorIntervalMs: flags.containerLogMonitorInterval }
        : {}),
    };
    if (kubeletConfig) {
      const applied = applyKubeletConfig(options, kubeletConfig, explicit);
      options = applied.options;
      for (const gate of unknownFeatureGates(kubeletConfig.options.featureGates ?? {}))
        process.stderr.write(
          `kubelet-kit run: ${kubeletConfig.file}: feature gate ${gate} is not used by this agent; ignoring it\n`,
        );
      for (const key of applied.unapplied) {
        process.stderr.write(`kubelet-kit run: ${kubeletConfig.file}: ${key} is read but not applied yet\n`);
      }
    }
    if (!options.podManifestPath && !options.manifestUrl && !options.kubeconfig) {
      runUsageError('no pod source given: pass --pod-manifest-path, --manifest-url or --kubeconfig');
      return;
    }
    if (options.offlineStoreDirectory && !options.kubeconfig) {
      runUsageError('--offline-store-dir keeps what the API server sends: it needs --kubeconfig');
      return;
    }
    agent = createAgent(options);
  } catch (err) {
    // A bad --runtime-classes file, say: named with its field, and nothing starts.
    runUsageError((err as Error).message);
    return;
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping; containers keep running');
    await agent.stop().catch((err: unknown) => logger.error({ err: String(err) }, 'stop failed'));
    flushLogs();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  try {
    await agent.start();
  } catch (err) {
    process.stderr.write(`kubelet-kit run: ${(err as Error).message}\n`);
    flushLogs();
    process.exit(1);
  }

  if (interactive) {
    process.stdout.write(
      `kubelet-kit: node ${agent.address ? `serving on http://${agent.address.address}:${agent.address.port}` : ''}; logs in ${logFile}\n`,
    );
    let last = '';
    const render = () => {
      const table = formatPodTable(agent.kubelet.podsWithStatus(), Date.now());
      const errors = agent.sourceErrors.slice(-5).map((e) => `! ${e}`);
      const screen = [table, ...(errors.length ? ['', ...errors] : [])].join('\n');
      if (screen === last) return;
      last = screen;
      process.stdout.write(`\x1b[2J\x1b[H${screen}\n`);
    };
    setInterval(render, 1000).unref();
    render();
  }
}

async function getPods(flags: { server: string; output?: string }): Promise<void> {
  const res = await fetch(new URL('/pods', flags.server)).catch((err: unknown) => {
    throw new Error(`cannot reach ${flags.server}: ${(err as Error).message}`);
  });
  if (!res.ok) throw new Error(`${flags.server}/pods answered ${res.status}`);
  const list = (await res.json()) as { items?: Pod[] };
  if (flags.output === 'json') process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  else process.stdout.write(`${formatPodTable(list.items ?? [], Date.now())}\n`);
}

const program = new Command('kubelet-kit').description(
  "The kubelet's pod machinery as a standalone node agent.",
);

program
  .command('run')
  .description('Run the node agent')
  .option(
    '--config <file>',
    'a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags given explicitly win over it',
  )
  .option('--pod-manifest-path <path>', 'directory (or file) of static pod manifests')
  .option('--manifest-url <url>', 'URL of a Pod or PodList manifest, polled every 20s')
  .option('--kubeconfig <path>', "kubeconfig of an API server to take this node's pods from")
  .option('--container-runtime-endpoint <endpoint>', 'CRI endpoint', 'unix:///run/containerd/containerd.sock')
  .option('--hostname-override <name>', 'node name (default: the host name)')
  .option('--root-dir <path>', 'directory for pod data and volumes', '/var/lib/kubelet-kit')
  .option('--max-pods <n>', 'most pods this node runs', int('--max-pods'), 110)
  .option(
    '--address <ip>',
    'address of the HTTP endpoints (unauthenticated: keep it on loopback)',
    '127.0.0.1',
  )
  .option('--port <n>', 'port of the HTTP endpoints (0: any free port)', int('--port'), 10250)
  .option('--object-dir <path>', 'directory of ConfigMap and Secret manifests for volumes and env')
  .option(
    '--offline-store-dir <path>',
    'with --kubeconfig, keep the pods, their ConfigMaps, Secrets and tokens, the Node and the last statuses here, and keep managing them while the API server is away (KubeEdge-style offline autonomy)',
  )
  .option(
    '--runtime-classes <path>',
    'file or directory of RuntimeClass objects (node.k8s.io/v1) that pods may name in runtimeClassName (with --kubeconfig: only for names the API server lacks)',
  )
  .option(
    '--allow-static-pod-api-references',
    'let static pods use ConfigMaps and Secrets (from --object-dir)',
  )
  .option('--pod-logs-dir <path>', 'where container logs go (default: <root-dir>/logs/pods)')
  .option('--sync-frequency <duration>', 'resync period of running pods', duration)
  .option('--file-check-frequency <duration>', 're-list period of --pod-manifest-path', duration)
  .option(
    '--node-ip <ip...>',
    'IP of the node, or a comma-separated dual-stack pair (default: the first non-loopback IPv4)',
  )
  .option(
    '--max-concurrent-syncs <n>',
    'bound on pod syncs running at once (default: none)',
    int('--max-concurrent-syncs'),
  )
  .option(
    '--max-concurrent-pod-creations <n>',
    'bound on pods whose sandbox is being created at once',
    int('--max-concurrent-pod-creations'),
    16,
  )
  .option(
    '--max-concurrent-creation-calls <n>',
    'bound on RunPodSandbox, CreateContainer and StartContainer calls in flight at once',
    int('--max-concurrent-creation-calls'),
    4,
  )
  .option(
    '--allowed-unsafe-sysctls <sysctls...>',
    'comma-separated unsafe sysctls or patterns ending in * pods may set, beside the safe ones',
  )
  .option('--node-labels <labels...>', 'labels of this node, k=v,k2=v2, over the default hostname/os/arch')
  .option('--register-with-taints <taints...>', "this node's taints, key=value:Effect,key2:Effect")
  .option(
    '--extended-resources <resources...>',
    'extended resources this node offers, example.com/foo=2,... (default none; not an upstream flag)',
  )
  .option(
    '--cluster-dns <ips...>',
    'comma-separated IPs of the cluster DNS servers, for pods with dnsPolicy ClusterFirst',
  )
  .option('--cluster-domain <domain>', "the cluster's DNS domain, searched before the host's domains")
  .option(
    '--resolv-conf <path>',
    "resolver configuration pods' DNS is based on ('' for none)",
    '/etc/resolv.conf',
  )
  // Events and the node lease, with a kubeconfig (upstream's flags and defaults).
  .option(
    '--event-qps <n>',
    'event requests per second to the API server (0: client-go default 5)',
    int('--event-qps'),
  )
  .option('--event-burst <n>', 'event requests allowed at once above --event-qps', int('--event-burst'))
  .option(
    '--node-lease-duration-seconds <n>',
    "the node Lease's duration; it is renewed every quarter of it",
    (value: string): number => {
      const n = int('--node-lease-duration-seconds')(value);
      if (n === 0) throw new InvalidArgumentError('--node-lease-duration-seconds must be greater than 0');
      return n;
    },
  )
  // Feature gates (upstream's flag; only EventedPLEG acts here).
  .option(
    '--feature-gates <gates>',
    'comma-separated Name=bool pairs of upstream feature gates, e.g. EventedPLEG=true',
    featureGatesFlag,
  )
  // Images (upstream's flags and defaults).
  .option(
    '--image-gc-high-threshold <percent>',
    'image filesystem usage at which image GC starts (default 85)',
    int('--image-gc-high-threshold'),
  )
  .option(
    '--image-gc-low-threshold <percent>',
    'image filesystem usage image GC frees down to (default 80)',
    int('--image-gc-low-threshold'),
  )
  .option(
    '--image-minimum-gc-age <duration>',
    'an image younger than this is never collected (default 2m)',
    duration,
  )
  .option(
    '--image-maximum-gc-age <duration>',
    'unused images older than this are collected whatever the usage (default 0: off)',
    duration,
  )
  // Not an upstream flag: upstream collects every 5 minutes; tests shorten it.
  .addOption(
    new Option('--image-gc-period <duration>', 'how often images are collected')
      .argParser(duration)
      .hideHelp(),
  )
  .option(
    '--serialize-image-pulls [bool]',
    'pull one image at a time (default true)',
    bool('--serialize-image-pulls'),
  )
  .option(
    '--max-parallel-image-pulls <n>',
    'most image pulls at once, with --serialize-image-pulls=false (default no bound)',
    int('--max-parallel-image-pulls'),
  )
  .option(
    '--registry-qps <n>',
    'image pulls started per second, 0 for no limit (default 5)',
    int('--registry-qps'),
  )
  .option(
    '--registry-burst <n>',
    'image pulls allowed at once above --registry-qps (default 10)',
    int('--registry-burst'),
  )
  .option(
    '--register-node [bool]',
    "with --kubeconfig, create this node's Node object (false: only update an existing one)",
    bool('--register-node'),
    true,
  )
  .option(
    '--node-status-update-frequency <duration>',
    "how often the Node's status is computed and sent when changed (default 10s)",
    duration,
  )
  .option(
    '--node-status-report-frequency <duration>',
    "how often the Node's status is sent when unchanged (default 5m, or the update frequency when only that is set)",
    duration,
  )
  .option(
    '--eviction-hard <thresholds>',
    'hard eviction thresholds, e.g. memory.available<100Mi,nodefs.available<10% (given, it replaces the defaults)',
    mapFlag('--eviction-hard', '<'),
  )
  .option(
    '--eviction-soft <thresholds>',
    'soft eviction thresholds, e.g. memory.available<1.5Gi (each needs --eviction-soft-grace-period)',
    mapFlag('--eviction-soft', '<'),
  )
  .option(
    '--eviction-soft-grace-period <periods>',
    'how long a soft threshold must hold before pods are evicted, e.g. memory.available=1m30s',
    mapFlag('--eviction-soft-grace-period', '='),
  )
  .option(
    '--eviction-minimum-reclaim <amounts>',
    'reclaim this much past a threshold before it is resolved, e.g. memory.available=0Mi,nodefs.available=500Mi',
    mapFlag('--eviction-minimum-reclaim', '='),
  )
  .option(
    '--eviction-pressure-transition-period <duration>',
    'how long a pressure condition stays after it was last observed (default 5m)',
    duration,
  )
  .option(
    '--eviction-max-pod-grace-period <seconds>',
    'most seconds a pod evicted under a soft threshold gets to stop (default 0)',
    int('--eviction-max-pod-grace-period'),
  )
  // Not an upstream flag: upstream's eviction manager looks every 10 s; tests shorten it.
  .addOption(
    new Option('--eviction-monitoring-period <duration>', 'how often the eviction manager looks')
      .argParser(duration)
      .hideHelp(),
  )
  .option('--system-reserved <resources...>', 'resources reserved for the system, e.g. cpu=100m,memory=100Mi')
  .option('--kube-reserved <resources...>', 'resources reserved for the kubelet, e.g. cpu=100m,memory=100Mi')
  .option(
    '--cgroups-per-qos [bool]',
    'pods in kubepods/burstable/besteffort/pod<uid> cgroups (default false)',
    (v: string) => v !== 'false',
  )
  .option('--cgroup-driver <driver>', "cgroupfs (default) or systemd: the container runtime's")
  .option('--cgroup-root <path>', 'the cgroup kubepods goes under (default /)')
  .option('--pod-max-pids <n>', "each pod cgroup's pids.max (default -1: none)", (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < -1)
      throw new InvalidArgumentError(`--pod-max-pids must be a whole number or -1, got ${JSON.stringify(v)}`);
    return n;
  })
  .option('--enforce-node-allocatable <list...>', 'pods (default) or none: kubepods limited to allocatable')
  // Container log rotation (upstream's flags; defaults 10Mi, 5, 1, 10s).
  .option(
    '--container-log-max-size <quantity>',
    "rotate a container's log when it reaches this size, e.g. 10Mi",
    (value: string): number => {
      let n: number;
      try {
        n = quantityValue(value);
      } catch {
        throw new InvalidArgumentError(
          `--container-log-max-size: ${JSON.stringify(value)} is not a quantity`,
        );
      }
      if (n <= 0) throw new InvalidArgumentError('--container-log-max-size must be greater than 0');
      return n;
    },
  )
  .option(
    '--container-log-max-files <n>',
    'log files kept per container, the current one included (at least 2)',
    (value: string): number => {
      const n = int('--container-log-max-files')(value);
      if (n < 2) throw new InvalidArgumentError('--container-log-max-files must be greater than 1');
      return n;
    },
  )
  .option(
    '--container-log-max-workers <n>',
    'containers whose logs are rotated at once',
    (value: string): number => {
      const n = int('--container-log-max-workers')(value);
      if (n < 1)
        throw new InvalidArgumentError('--container-log-max-workers must be greater than or equal to 1');
      return n;
    },
  )
  .option(
    '--container-log-monitor-interval <duration>',
    'how often container logs are checked for rotation',
    (value: string): number => {
      const ms = duration(value);
      if (ms < 3000)
        throw new InvalidArgumentError(
          '--container-log-monitor-interval must be a positive time duration greater than or equal to 3s',
        );
      return ms;
    },
  )
  .option('--log-level <level>', 'debug, info, warn or error', 'info')
  .option(
    '--log-file <path>',
    'write logs there (default: stdout, or <root-dir>/kubelet-kit.log on a terminal)',
  )
  .option('--no-table', 'on a terminal, print logs instead of the live pod table')
  // The kubelet API's transport and auth: HTTPS once any of these is given or --address is not loopback.
  .option(
    '--tls-cert-file <path>',
    'serving certificate of the HTTPS endpoints (default: self-signed in --cert-dir)',
  )
  .option('--tls-private-key-file <path>', 'key of --tls-cert-file')
  .option(
    '--cert-dir <path>',
    'where the self-signed kubelet.crt and kubelet.key go (default <root-dir>/pki)',
  )
  .option('--tls-min-version <version>', 'VersionTLS12 or VersionTLS13')
  .option('--tls-cipher-suites <suites...>', 'TLS 1.2 cipher suites (IANA names, comma-separated)')
  .option(
    '--client-ca-file <path>',
    'client certificates signed by these CAs authenticate (CN user, O groups)',
  )
  .option(
    '--anonymous-auth [bool]',
    'let requests without credentials in as system:anonymous (default: true unless --client-ca-file or --authentication-token-webhook)',
    bool('--anonymous-auth'),
  )
  .option(
    '--authentication-token-webhook [bool]',
    'authenticate bearer tokens through TokenReview (needs --kubeconfig)',
    bool('--authentication-token-webhook'),
  )
  .option(
    '--authentication-token-webhook-cache-ttl <duration>',
    'how long TokenReview answers are kept (default 2m)',
    duration,
  )
  .option('--authorization-mode <mode>', 'AlwaysAllow, or Webhook (SubjectAccessReview, needs --kubeconfig)')
  .option(
    '--authorization-webhook-cache-authorized-ttl <duration>',
    'how long allowed SubjectAccessReview answers are kept (default 5m)',
    duration,
  )
  .option(
    '--authorization-webhook-cache-unauthorized-ttl <duration>',
    'how long refused SubjectAccessReview answers are kept (default 30s)',
    duration,
  )
  .option(
    '--read-only-port <n>',
    'HTTP port of the unauthenticated read-only endpoints (0: off)',
    int('--read-only-port'),
    0,
  )
  .action((flags: RunFlags, command: Command) => run(flags, command));

program
  .command('get')
  .description('Show the pods of a running agent')
  .argument('<resource>', 'pods')
  .option('--server <url>', "the agent's HTTP endpoint", 'http://127.0.0.1:10250')
  .option('-o, --output <format>', 'json, or a table when absent')
  .action(async (resource: string, flags: { server: string; output?: string }) => {
    if (resource !== 'pods' && resource !== 'pod' && resource !== 'po') {
      throw new InvalidArgumentError(`unknown resource ${JSON.stringify(resource)}: only pods`);
    }
    await getPods(flags);
  });

// Many simulated nodes in one process (simulate-command.ts).
program.addCommand(simulateCommand());

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`kubelet-kit: ${(err as Error).message}\n`);
  process.exit(1);
});
