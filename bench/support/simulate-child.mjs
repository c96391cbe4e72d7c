// simulateNodes (what `kubelet-kit simulate` runs) in a process of its own, grown on request,
// for simulate.bench.mjs: argv kubeconfig and root directory; IPC { add: n } starts n more nodes
// and answers { nodes, startMs }; 'window' starts a measuring window (event-loop delay and
// warnings from now on), 'report' answers what the window saw; 'stop' stops the nodes and exits.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { simulateNodes } from '@kubelet-kit/node';

const [kubeconfig, rootDirectory] = process.argv.slice(2);
let problems = 0;
let firstProblems = [];
const problem = (fields, msg) => {
  problems++;
  if (firstProblems.length < 3) firstProblems.push(`${msg ?? ''} ${JSON.stringify(fields)}`.slice(0, 240));
};
const noop = () => {};
const logger = { debug: noop, info: noop, warn: problem, error: problem, child: () => logger };
const sim = await simulateNodes({
  nodes: 0,
  kubeconfig,
  rootDirectory,
  // As a cluster's node: with cluster DNS (else each ClusterFirst pod gets a warning event).
  agent: { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' },
  logger,
});
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
process.on('message', async (m) => {
  if (m?.add) {
    const t = performance.now();
    await sim.addNodes(m.add);
    process.send({ nodes: sim.nodes.length, startMs: performance.now() - t });
  } else if (m === 'window') {
    delay.reset();
    problems = 0;
    firstProblems = [];
    process.send({ ok: true });
  } else if (m === 'report') {
    process.send({
      loopDelayP99Ms: delay.percentile(99) / 1e6,
      loopDelayMaxMs: delay.max / 1e6,
      problems,
      firstProblems,
    });
  } else if (m === 'stop') {
    await sim.stop();
    process.exit(0);
  }
});
process.send({ ready: true });
