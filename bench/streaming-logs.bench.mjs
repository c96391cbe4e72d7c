// Log streaming through the agent's /containerLogs against streaming the same file raw, in the
// same run. File-only: no containerd (the server is the agent's KubeletServer with a host that
// knows one pod, the reader kuberuntime's ReadLogs over a CRI-format file).
//  - streaming.logs.ratio: time to GET the whole log of a container through /containerLogs
//    (parsing the CRI framing, as upstream's ReadLogs does) divided by the time to GET the same
//    file through a plain HTTP server that pipes it unparsed; medians of alternating runs. Lower
//    is better; the target 2 says the agent streams at least half as fast as the raw file.
//  - streaming.logs.mibPerSec: the agent's throughput, MiB of log content per second.
//   npm run build && node bench/streaming-logs.bench.mjs
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { noopLogger, RealClock } from '@kubelet-kit/core';
import { ContainerState } from '@kubelet-kit/cri';
import { getContainerLogs } from '@kubelet-kit/kuberuntime';
import { Registry } from 'prom-client';
// The server is internal to @kubelet-kit/node: taken from its build.
import { KubeletServer } from '../packages/node/dist/server.js';

const sizeMiB = Number(process.env.LOGS_BENCH_MIB ?? 100);
const rounds = Number(process.env.LOGS_BENCH_ROUNDS ?? 5);
const log = (msg) => console.error(`streaming-logs.bench: ${msg}`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-logs-bench-'));
const file = path.join(work, '0.log');
// CRI lines as containerd writes them: ~100 bytes of content each, a few partial ones.
{
  const out = fs.openSync(file, 'w');
  const content = 'x'.repeat(90);
  const lines = [];
  let contentBytes = 0;
  for (let i = 0; contentBytes < sizeMiB * 1024 * 1024; i++) {
    const tag = i % 50 === 0 ? 'P' : 'F';
    lines.push(`2026-12-03T06:00:00.${String(i % 1e9).padStart(9, '0')}Z stdout ${tag} ${i} ${content}\n`);
    contentBytes += content.length + String(i).length + 2;
    if (lines.length === 10_000) {
      fs.writeSync(out, lines.join(''));
      lines.length = 0;
    }
  }
  fs.writeSync(out, lines.join(''));
  fs.closeSync(out);
}
const fileBytes = fs.statSync(file).size;
log(`log file of ${(fileBytes / 2 ** 20).toFixed(1)} MiB`);

const runtimeService = {
  containerStatus: async () => ({
    status: { logPath: file, state: ContainerState.CONTAINER_EXITED },
    info: {},
  }),
};
const pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'app', image: 'busybox' }] },
  status: {
    containerStatuses: [
      {
        name: 'app',
        image: 'busybox',
        imageID: '',
        ready: false,
        restartCount: 0,
        containerID: 'containerd://c1',
        state: { terminated: { exitCode: 0, containerID: 'containerd://c1' } },
      },
    ],
  },
};
const clock = new RealClock();
const agent = new KubeletServer({
  port: 0,
  pods: () => [pod],
  healthChecks: [],
  registry: new Registry(),
  logger: noopLogger,
  containerLogs: {
    getPodByName: (ns, name) => (ns === 'default' && name === 'web' ? pod : undefined),
    getContainerLogs: (id, opts, stdout, stderr, signal) =>
      getContainerLogs(runtimeService, id, opts, stdout, stderr, { clock, signal }),
  },
});
const agentAddr = await agent.start();
const raw = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => raw.listen(0, '127.0.0.1', r));
const rawPort = raw.address().port;

/** GETs a URL to its end; resolves with the bytes received and the milliseconds taken. */
function fetchAll(url) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    http
      .get(url, (res) => {
        let bytes = 0;
        res.on('data', (d) => {
          bytes += d.length;
        });
        res.on('end', () => resolve({ bytes, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const agentUrl = `http://127.0.0.1:${agentAddr.port}/containerLogs/default/web/app`;
const rawUrl = `http://127.0.0.1:${rawPort}/`;
// Warm-up: page cache and JIT.
const warm = await fetchAll(agentUrl);
await fetchAll(rawUrl);
const agentMs = [];
const rawMs = [];
for (let i = 0; i < rounds; i++) {
  rawMs.push((await fetchAll(rawUrl)).ms);
  agentMs.push((await fetchAll(agentUrl)).ms);
}
await agent.stop();
raw.close();
fs.rmSync(work, { recursive: true, force: true });

const a = median(agentMs);
const r = median(rawMs);
log(
  `agent ${a.toFixed(0)} ms for ${(warm.bytes / 2 ** 20).toFixed(1)} MiB of content; raw ${r.toFixed(0)} ms for ${(fileBytes / 2 ** 20).toFixed(1)} MiB`,
);
console.log(
  JSON.stringify([
    {
      name: 'streaming.logs.ratio',
      value: Number((a / r).toFixed(2)),
      unit: 'x',
      target: 2,
      note: `agent-time / raw-time: GET /containerLogs of a ${sizeMiB} MiB CRI log vs the same file piped unparsed over HTTP; medians of ${rounds}`,
    },
    {
      name: 'streaming.logs.mibPerSec',
      value: Number((warm.bytes / 2 ** 20 / (a / 1000)).toFixed(1)),
      unit: 'MiB/s',
      note: 'log content streamed through /containerLogs per second',
    },
  ]),
);
