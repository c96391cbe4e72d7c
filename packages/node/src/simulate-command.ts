// The `kubelet-kit simulate` subcommand: its flags, and running simulateNodes until a signal.
import type { Logger } from '@kubelet-kit/core';
import { Command, InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import { parseGoDuration } from './go-duration.js';
import { lineBatchingDestination } from './log-destination.js';
import type { SimulatedNodeOptions, Simulation } from './simulate.js';

interface SimulateFlags {
  nodes: number;
  kubeconfig: string;
  nodeNamePrefix: string;
  maxPods: number;
  rootDir?: string;
  imagePullDuration?: number;
  nodeLeaseDurationSeconds?: number;
  nodeStatusUpdateFrequency?: number;
  nodeStatusReportFrequency?: number;
  syncFrequency?: number;
  resolvConf: string;
  clusterDns?: string[];
  clusterDomain?: string;
  logLevel: string;
  logFile?: string;
}

function count(name: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(
        `${name} must be a whole number of at least ${min}, got ${JSON.stringify(value)}`,
      );
    return n;
  };
}

function duration(name: string) {
  return (value: string): number => {
    const ms = parseGoDuration(value);
    if (ms === undefined || ms < 0)
      throw new InvalidArgumentError(
        `${name}: invalid duration ${JSON.stringify(value)} (use e.g. 20s, 1m, 500ms)`,
      );
    return ms;
  };
}

async function simulate(flags: SimulateFlags): Promise<void> {
  const destination = flags.logFile
    ? pino.destination({ dest: flags.logFile, sync: false, mkdir: true })
    : lineBatchingDestination(1);
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
  const agent: SimulatedNodeOptions = {
    resolvConf: flags.resolvConf,
    ...(flags.clusterDns?.length
      ? {
          clusterDNS: flags.clusterDns
            .flatMap((v) => v.split(','))
            .map((v) => v.trim())
            .filter(Boolean),
        }
      : {}),
    ...(flags.clusterDomain !== undefined ? { clusterDomain: flags.clusterDomain } : {}),
    ...(flags.nodeLeaseDurationSeconds !== undefined
      ? { nodeLeaseDurationSeconds: flags.nodeLeaseDurationSeconds }
      : {}),
    ...(flags.nodeStatusUpdateFrequency !== undefined
      ? { nodeStatusUpdateFrequencyMs: flags.nodeStatusUpdateFrequency }
      : {}),
    ...(flags.nodeStatusReportFrequency !== undefined
      ? { nodeStatusReportFrequencyMs: flags.nodeStatusReportFrequency }
      : {}),
    ...(flags.syncFrequency !== undefined ? { syncFrequencyMs: flags.syncFrequency } : {}),
  };
  let simulation: Simulation | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping the simulated nodes');
    await simulation?.stop().catch((err: unknown) => logger.error({ err: String(err) }, 'stop failed'));
    flushLogs();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    // Loaded here: `kubelet-kit run` need not carry the in-memory CRI (@kubelet-kit/cri/testing).
    const { simulateNodes } = await import('./simulate.js');
    simulation = await simulateNodes({
      nodes: flags.nodes,
      kubeconfig: flags.kubeconfig,
      nodeNamePrefix: flags.nodeNamePrefix,
      maxPods: flags.maxPods,
      ...(flags.rootDir ? { rootDirectory: flags.rootDir } : {}),
      ...(flags.imagePullDuration ? { imagePullMs: flags.imagePullDuration } : {}),
      agent,
      logger,
    });
  } catch (err) {
    process.stderr.write(`kubelet-kit simulate: ${(err as Error).message}\n`);
    flushLogs();
    process.exit(1);
  }
  const names = simulation.nodes.map((n) => n.name);
  const shown = names.length > 4 ? `${names.slice(0, 3).join(', ')}, …, ${names.at(-1)}` : names.join(', ');
  process.stdout.write(`kubelet-kit simulate: ${names.length} nodes running (${shown})\n`);
}

/**
 * `kubelet-kit simulate --nodes N --kubeconfig <file>`: N nodes, each the `run` agent over an
 * in-memory runtime, against one API server.
 *
 * @internal
 */
export function simulateCommand(): Command {
  return new Command('simulate')
    .description(
      'Run many nodes in this process, each the real kubelet logic over an in-memory container runtime',
    )
    .requiredOption('--nodes <n>', 'how many nodes', count('--nodes', 1))
    .requiredOption('--kubeconfig <path>', 'kubeconfig of the API server the nodes register with')
    .option('--node-name-prefix <prefix>', 'node names are this and a number from 0', 'sim-')
    .option('--max-pods <n>', 'most pods each node runs', count('--max-pods', 1), 110)
    .option(
      '--root-dir <path>',
      "directory of the nodes' root directories (default: <tmp>/kubelet-kit-simulate)",
    )
    .option(
      '--image-pull-duration <duration>',
      'how long a fake image pull takes (default 0)',
      duration('--image-pull-duration'),
    )
    .option(
      '--node-lease-duration-seconds <n>',
      "each node Lease's duration (default 40); renewed every quarter of it",
      count('--node-lease-duration-seconds', 1),
    )
    .option(
      '--node-status-update-frequency <duration>',
      "how often each Node's status is computed (default 10s)",
      duration('--node-status-update-frequency'),
    )
    .option(
      '--node-status-report-frequency <duration>',
      'how often an unchanged Node status is still sent (default 5m)',
      duration('--node-status-report-frequency'),
    )
    .option(
      '--sync-frequency <duration>',
      'resync period of running pods (default 1m)',
      duration('--sync-frequency'),
    )
    .option(
      '--resolv-conf <path>',
      "resolver configuration pods' DNS is based on ('' for none)",
      '/etc/resolv.conf',
    )
    .option('--cluster-dns <ips...>', 'comma-separated IPs of the cluster DNS servers, for ClusterFirst pods')
    .option('--cluster-domain <domain>', "the cluster's DNS domain")
    .option('--log-level <level>', 'debug, info, warn or error', 'warn')
    .option('--log-file <path>', 'write logs there (default: stdout)')
    .action((flags: SimulateFlags) => simulate(flags));
}
