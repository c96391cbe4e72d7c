// 1,000 HTTP readiness probes at a 1 s period against a local server, for about 20 s of real
// time. Measures the CPU of this (probing) process — the server runs in a child process so
// its work is not counted — and the timing drift: how late each probe starts against its
// worker's schedule (first probe + k × period).
import { fork } from 'node:child_process';
import { RealClock } from '@kubelet-kit/core';
import { DefaultProbeManager, Prober } from '@kubelet-kit/prober';

const probes = Number(process.env.PROBER_BENCH_PROBES ?? 1000);
const periodMs = 1000;
const warmupMs = 3000;
const windowMs = Number(process.env.PROBER_BENCH_WINDOW_MS ?? 20_000);

// The server: a child process answering every request with a fixed 200, kept as cheap as possible
// (raw sockets, a deep accept backlog) so that it does not starve the prober on a small machine.
const serverSource = `
const net = require('node:net');
const response = Buffer.from('HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok');
const server = net.createServer((socket) => {
  socket.on('error', () => {});
  socket.once('data', () => socket.end(response));
});
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => process.send(server.address().port));
`;
const child = fork('-e', [serverSource], {
  execArgv: ['-e', serverSource],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const port = await new Promise((resolve) => child.once('message', resolve));

const clock = new RealClock();
/** Start times of each container's probes. */
const starts = new Map();
let failures = 0;
let stopping = false;
const reasons = new Map();

class TimedProber extends Prober {
  async probe(probeType, pod, status, container, containerId, signal) {
    const list = starts.get(container.name) ?? [];
    list.push(performance.now());
    starts.set(container.name, list);
    const result = await super.probe(probeType, pod, status, container, containerId, signal);
    // Probes cut short by the final stop are not failures of the prober.
    if (result !== 'Success' && !stopping) failures++;
    return result;
  }
}

const now = new Date().toISOString();
const statuses = new Map();
const pods = [];
for (let i = 0; i < probes; i++) {
  const uid = `uid-${i}`;
  const name = `c${i}`;
  pods.push({
    metadata: { name: `pod-${i}`, namespace: 'bench', uid },
    spec: {
      containers: [
        {
          name,
          readinessProbe: { httpGet: { port, path: `/healthz/${i}` }, periodSeconds: 1, timeoutSeconds: 1 },
        },
      ],
    },
  });
  statuses.set(uid, {
    phase: 'Running',
    podIP: '127.0.0.1',
    containerStatuses: [
      {
        name,
        image: 'x',
        imageID: '',
        containerID: `containerd://${i}`,
        ready: false,
        restartCount: 0,
        started: true,
        state: { running: { startedAt: now } },
      },
    ],
  });
}

const runner = { runInContainer: () => Promise.reject(new Error('no exec in this benchmark')) };
const manager = new DefaultProbeManager({
  statusProvider: { getPodStatus: (uid) => statuses.get(uid) },
  runner,
  clock,
  prober: new TimedProber({
    runner,
    clock,
    recorder: {
      event: (_object, _type, _reason, message) => {
        if (stopping) return;
        const key = message.replace(/\/healthz\/\d+/, '').slice(0, 100);
        reasons.set(key, (reasons.get(key) ?? 0) + 1);
      },
    },
  }),
});
for (const pod of pods) manager.addPod(pod);
manager.start();

await new Promise((r) => setTimeout(r, warmupMs));
const windowStart = performance.now();
const cpuBefore = process.cpuUsage();
await new Promise((r) => setTimeout(r, windowMs));
const cpu = process.cpuUsage(cpuBefore);
const windowEnd = performance.now();
stopping = true;
await manager.stop();
child.kill();
// Lateness of every probe started in the window against its worker's own schedule.
let late = 0;
let count = 0;
for (const list of starts.values()) {
  const first = list[0];
  for (let k = 1; k < list.length; k++) {
    if (list[k] < windowStart || list[k] > windowEnd) continue;
    late += list[k] - (first + k * periodMs);
    count++;
  }
}
const cpuPercent = ((cpu.user + cpu.system) / 1000 / (windowEnd - windowStart)) * 100;
const driftMs = count ? late / count : Number.NaN;
console.error(
  `prober bench: ${probes} probes, ${count} probe starts in ${Math.round(windowEnd - windowStart)} ms, ${failures} failed`,
  reasons,
);
console.log(
  JSON.stringify([
    { name: 'prober.http1000.cpuPercent', value: Number(cpuPercent.toFixed(1)), unit: '%', target: 10 },
    {
      name: 'prober.http1000.driftMs',
      value: Number(driftMs.toFixed(2)),
      unit: 'ms',
      note:
        `mean lateness of ${count} probe starts vs each worker's first start + k × period (negative: ` +
        `the first start was itself late, the later ones keep to the intended times); ${failures} failed`,
    },
  ]),
);
// Agents' sockets and the child's channel must not keep the process alive.
process.exit(0);
