// `kubelet-kit simulate`: many nodes in one process, each the agent `kubelet-kit run` assembles
// (pod sources, pod workers, kuberuntime, PLEG, probes, status manager, Node status, Lease,
// events) over an in-memory CRI of its own. Only the runtime is simulated (see
// simulate-containers.ts); kwok, by contrast, runs no kubelet code and writes the statuses itself.
import os from 'node:os';
import path from 'node:path';
import { type Clock, type Logger, noopLogger, RealClock } from '@kubelet-kit/core';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { type Agent, type AgentOptions, createAgent } from './agent.js';
import { runSimulatedContainers } from './simulate-containers.js';

/**
 * What every simulated node takes from {@link AgentOptions}: all but what makes a node itself
 * (its name, runtime, root directory, API server, clock and logger, which {@link SimulateOptions} sets).
 *
 * @public
 */
export type SimulatedNodeOptions = Omit<
  AgentOptions,
  'nodeName' | 'runtimeEndpoint' | 'rootDirectory' | 'kubeconfig' | 'clock' | 'logger' | 'port'
>;

/**
 * Options of {@link simulateNodes}: the `kubelet-kit simulate` flags, as an object.
 *
 * @public
 */
export interface SimulateOptions {
  /** How many nodes to start (more can be added with {@link Simulation.addNodes}). */
  readonly nodes: number;
  /** The API server every node registers with and takes its pods from. */
  readonly kubeconfig: string;
  /** Node names are this prefix and the node's number from 0: `sim-0`, `sim-1`, …; default `sim-`. */
  readonly nodeNamePrefix?: string;
  /** Each node's `--max-pods`; default 110. */
  readonly maxPods?: number;
  /** Each node's root directory is `<rootDirectory>/<node name>`; default `<tmp>/kubelet-kit-simulate`. */
  readonly rootDirectory?: string;
  /** How long a fake image pull takes, ms (real time); default 0. Every image pulls. */
  readonly imagePullMs?: number;
  /** Settings every node's agent gets (lease duration, status frequencies, sync frequency, …). */
  readonly agent?: SimulatedNodeOptions;
  readonly clock?: Clock;
  /** Each node logs through a child of it with its `node` name. */
  readonly logger?: Logger;
}

/**
 * One simulated node: its agent (the real kubelet assembly) and its in-memory runtime.
 *
 * @public
 */
export interface SimulatedNode {
  readonly name: string;
  readonly agent: Agent;
  readonly runtime: InMemoryCriServer;
}

/**
 * Running simulated nodes.
 *
 * @public
 */
export interface Simulation {
  /** The nodes, in the order of their numbers. */
  readonly nodes: readonly SimulatedNode[];
  /** Starts `count` more nodes, numbered on from the last; resolves once they run. */
  addNodes(count: number): Promise<readonly SimulatedNode[]>;
  /**
   * Stops every node: agents first (their Leases stop being renewed), then their runtimes, whose
   * containers vanish with them. Pods stay bound to the nodes on the API server.
   */
  stop(): Promise<void>;
}

/** Nodes started at once: each start dials its runtime and binds a port; a few overlap well. */
const startConcurrency = 8;

/** Pod IPs of node `i`: a /16 of its own in 10.0.0.0/8, away from containerd's default 10.88. */
function podSubnet(i: number): string {
  return `10.${(100 + i) % 256}.0.0/16`;
}

/**
 * Runs `options.nodes` nodes in this process, each the agent of `kubelet-kit run --kubeconfig`
 * over its own in-memory CRI: each registers its Node, renews its Lease, and runs the pods the
 * API server binds to it (`spec.nodeName`) through the whole pipeline, reporting their statuses.
 * The in-memory containers run until stopped, or exit as their command says (`sleep 5; exit 1`,
 * `true`) or as the pod's `simulate.kubelet-kit.io/exit.<container>` annotation says.
 *
 * @public
 */
export async function simulateNodes(options: SimulateOptions): Promise<Simulation> {
  if (!Number.isInteger(options.nodes) || options.nodes < 0)
    throw new Error(`simulate: nodes must be a whole number, got ${options.nodes}`);
  const clock = options.clock ?? new RealClock();
  const logger = options.logger ?? noopLogger;
  const prefix = options.nodeNamePrefix ?? 'sim-';
  const root = path.resolve(options.rootDirectory ?? path.join(os.tmpdir(), 'kubelet-kit-simulate'));
  const nodes: SimulatedNode[] = [];
  const stops: (() => void)[] = [];
  let stopped = false;

  const startNode = async (i: number): Promise<SimulatedNode> => {
    const name = `${prefix}${i}`;
    const nodeLogger = logger.child({ node: name });
    const rootDirectory = path.join(root, name);
    const runtime = await InMemoryCriServer.start({
      clock,
      // Any image pulls (a fake registry); the image filesystem is the node's root's.
      pullUnknownImages: 'succeed',
      imageFsMountpoint: root,
      podSubnet: podSubnet(i),
      recordCalls: false,
    });
    if (options.imagePullMs) runtime.setLatency('PullImage', options.imagePullMs);
    stops.push(runSimulatedContainers(runtime, clock, nodeLogger.child({ component: 'simulated-runtime' })));
    let agent: Agent;
    try {
      agent = createAgent({
        ...options.agent,
        nodeName: name,
        runtimeEndpoint: runtime.endpoint,
        rootDirectory,
        kubeconfig: options.kubeconfig,
        maxPods: options.maxPods ?? options.agent?.maxPods ?? 110,
        port: 0,
        clock,
        logger: nodeLogger,
      });
      await agent.start();
    } catch (err) {
      await runtime.close();
      throw new Error(`simulate: node ${name}: ${(err as Error).message}`);
    }
    return { name, agent, runtime };
  };

  let nextIndex = 0;
  const addNodes = async (count: number): Promise<readonly SimulatedNode[]> => {
    if (stopped) throw new Error('simulate: the simulation is stopped');
    // Numbers are taken at once, so that calls made together never share one.
    const first = nextIndex;
    nextIndex += count;
    const added: (SimulatedNode | undefined)[] = new Array(count);
    let next = 0;
    let failure: unknown;
    const worker = async () => {
      for (let k = next++; k < count && failure === undefined; k = next++) {
        try {
          added[k] = await startNode(first + k);
        } catch (err) {
          failure ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(startConcurrency, count) }, worker));
    // The nodes that did start are kept (and stopped by stop()), in the order of their numbers.
    const started = added.filter((n): n is SimulatedNode => n !== undefined);
    nodes.push(...started);
    if (failure !== undefined) throw failure;
    return started;
  };

  const simulation: Simulation = {
    nodes,
    addNodes,
    async stop() {
      stopped = true;
      for (const stop of stops) stop();
      await Promise.all(
        nodes.map(async (n) => {
          await n.agent
            .stop()
            .catch((err: unknown) => logger.warn({ node: n.name, err: String(err) }, 'stop failed'));
          await n.runtime.close();
        }),
      );
    },
  };
  try {
    await addNodes(options.nodes);
  } catch (err) {
    await simulation.stop();
    throw err;
  }
  return simulation;
}
