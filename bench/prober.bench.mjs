// 1,000 HTTP readiness probes at a 1 s period against a local server, for about 20 s of real
// time. Measures the CPU of this (probing) process — the server runs in a child process so
// its work is not counted — and the timing drift: how late each probe starts against its
// worker's schedule (first probe + k × period). Then the floor: the same requests through bare
// node:net sockets, so that the prober's CPU can be read against what sockets alone cost here.
import { fork } from 'node:child_process';
import net from 'node:net';
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

/** Waits out the warm-up, then measures this process's CPU (in % of one core) over the window. */
async function measureWindow() {
  await new Promise((r) => setTimeout(r, warmupMs));
  const start = performance.now();
  const cpuBefore = process.cpuUsage();
  await new Promise((r) => setTimeout(r, windowMs));
  const cpu = process.cpuUsage(cpuBefore);
  const end = performance.now();
  return { start, end, cpuPercent: ((cpu.user + cpu.system) / 1000 / (end - start)) * 100 };
}

const { start: windowStart, end: windowEnd, cpuPercent } = await measureWindow();
stopping = true;
await manager.stop();

// The floor: the same requests at the same rate through bare node:net sockets (connect, write
// the request, read to the end, close), measured in this process right after the prober. On
// these shared machines the cost of a socket moves a lot from day to day; the prober's CPU is
// only comparable with this floor from the same run.
const floorRequest = Buffer.from(
  'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kube-probe/1.34\r\nAccept: */*\r\nConnection: close\r\n\r\n',
);
const floorTimers = [];
const floorRequestOnce = () => {
  const socket = net.connect({ port, host: '127.0.0.1' });
  socket.on('connect', () => socket.write(floorRequest));
  socket.on('data', () => {});
  socket.on('end', () => socket.destroy());
  socket.on('error', () => socket.destroy());
};
for (let i = 0; i < probes; i++) {
  floorTimers.push(
    setTimeout(() => floorTimers.push(setInterval(floorRequestOnce, periodMs)), (i * periodMs) / probes),
  );
}
const { cpuPercent: floorCpuPercent } = await measureWindow();
for (const timer of floorTimers) clearTimeout(timer);
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
const driftMs = count ? late / count : Number.NaN;
console.error(
  `prober bench: ${probes} probes, ${count} probe starts in ${Math.round(windowEnd - windowStart)} ms, ${failures} failed`,
  reasons,
);
console.log(
  JSON.stringify([
    {
      name: 'prober.http1000.cpuPercent',
      value: Number(cpuPercent.toFixed(1)),
      unit: '%',
      target: 10,
      note: `bare node:net sockets making the same requests in the same run: ${floorCpuPercent.toFixed(1)} %`,
    },
    {
      name: 'prober.http1000.floorRatio',
      value: Number((cpuPercent / floorCpuPercent).toFixed(2)),
      unit: 'x',
      note: 'prober CPU / CPU of bare node:net sockets making the same 1000 requests/s (connect, write, read, close)',
    },
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
