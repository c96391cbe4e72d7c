// An exec round trip through the agent against raw CRI ExecSync, in the same run.
//  - streaming.exec.ratio: the median time of `POST /run/{ns}/{pod}/{container}?cmd=true` on the
//    agent (pod lookup, runtime pod list, CRI ExecSync, the HTTP answer) divided by the median of
//    CRI ExecSync of the same command on the same container straight from a gRPC client. Both
//    sides pay containerd's exec (a runc exec of a process), which dominates; 1 means the agent
//    adds nothing.
//  - streaming.exec.agent.ms, streaming.exec.cri.ms: the two medians.
//
// Needs the private containerd (KUBELET_KIT_CRI_ENDPOINT) and `npm run build`; refuses to run
// while the runtime holds pods of others (NODE_BENCH_ALLOW_FOREIGN_PODS=1 overrides).
import fs from 'node:fs';
import path from 'node:path';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import { startAgent } from './support/agent-process.mjs';
import { removeSandboxes } from './support/cri-floor.mjs';
import { sleepPodManifest } from './support/pods.mjs';
import { benchWorkDir } from './support/work-dir.mjs';

const samples = Number(process.env.STREAMING_BENCH_SAMPLES ?? 40);
const nodeName = 'kkstreambench';
const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error(
    'streaming-exec.bench: KUBELET_KIT_CRI_ENDPOINT is not set; start the private containerd first',
  );
  process.exit(1);
}
const log = (msg) => console.error(`streaming-exec.bench: ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, digits = 2) => Number(x.toFixed(digits));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 60_000 });
const ours = (s) => s.metadata?.name?.endsWith(`-${nodeName}`);

const work = benchWorkDir('kk-streaming-bench-');
const manifestDir = path.join(work, 'manifests');
fs.mkdirSync(manifestDir);
let agent;
try {
  const foreign = (await runtime.listPodSandbox({})).items.filter((s) => !ours(s));
  if (foreign.length && process.env.NODE_BENCH_ALLOW_FOREIGN_PODS !== '1') {
    throw new Error(
      `the runtime at ${endpoint} holds ${foreign.length} pod sandboxes of others, which the agent would kill; ` +
        'give the benchmark a containerd of its own or set NODE_BENCH_ALLOW_FOREIGN_PODS=1',
    );
  }
  await removeSandboxes(runtime, ours);
  fs.writeFileSync(path.join(manifestDir, 'exec.json'), JSON.stringify(sleepPodManifest(0, 'exec')));
  agent = await startAgent({ endpoint, manifestDir, rootDir: path.join(work, 'root'), nodeName });
  const podName = `exec-0-${nodeName}`;
  let containerId;
  for (let i = 0; i < 600 && !containerId; i++) {
    const pod = (await agent.pods()).find((p) => p.metadata?.name === podName);
    const cs = pod?.status?.containerStatuses?.[0];
    if (cs?.state?.running && cs.containerID) containerId = cs.containerID.replace(/^[a-z]+:\/\//, '');
    else await sleep(200);
  }
  if (!containerId) throw new Error(`${podName} did not run`);
  const url = `${agent.baseUrl}/run/default/${podName}/sleep?cmd=true`;

  const viaAgent = async () => {
    const res = await fetch(url, { method: 'POST' });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`/run answered ${res.status}`);
  };
  const viaCri = async () => {
    const r = await runtime.execSync({ containerId, cmd: ['true'], timeout: 0 });
    if (r.exitCode !== 0) throw new Error(`ExecSync exit ${r.exitCode}`);
  };
  const time = async (fn) => {
    const t0 = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  // Warm-up, then the two interleaved so that a slow phase of the machine hits both alike.
  for (let i = 0; i < 5; i++) {
    await viaAgent();
    await viaCri();
  }
  const agentMs = [];
  const criMs = [];
  for (let i = 0; i < samples; i++) {
    agentMs.push(await time(viaAgent));
    criMs.push(await time(viaCri));
  }
  const a = median(agentMs);
  const c = median(criMs);
  log(`agent /run median ${a.toFixed(2)} ms, CRI ExecSync median ${c.toFixed(2)} ms (${samples} each)`);
  console.log(
    JSON.stringify([
      {
        name: 'streaming.exec.ratio',
        value: round(a / c),
        unit: 'x',
        target: 1.2,
        note: `median of ${samples}: POST /run (${round(a)} ms) over raw CRI ExecSync (${round(c)} ms) of \`true\``,
      },
      { name: 'streaming.exec.agent.ms', value: round(a), unit: 'ms', note: 'POST /run of `true`, median' },
      { name: 'streaming.exec.cri.ms', value: round(c), unit: 'ms', note: 'CRI ExecSync of `true`, median' },
    ]),
  );
} finally {
  await agent?.kill('SIGTERM').catch(() => {});
  await removeSandboxes(runtime, ours).catch((err) => log(`clean-up failed: ${err.message}`));
  runtime.close();
  fs.rmSync(work, { recursive: true, force: true });
}
