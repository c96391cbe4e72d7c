// Memory of a process from /proc (Linux only), split as the footprint notes report it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

/** VmRSS, RssAnon (the process's own pages) and RssFile (mapped files: the node binary), in MiB. */
export function rssParts(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)\\s+kB$`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kib('VmRSS') / 1024, anon: kib('RssAnon') / 1024, file: kib('RssFile') / 1024 };
}

/** The same for a bare `node` that only waits: the floor under any agent on this machine. */
export function bareNodeRss() {
  return waitingNodeRss(['-e', 'setTimeout(() => {}, 60_000)'], 1500);
}

/**
 * Node's built-in modules the agent (and @grpc/grpc-js under it) loads: HTTP/2 for gRPC, TLS and
 * crypto for the secure server, zlib, child processes, and the rest.
 */
const agentBuiltins = [
  'async_hooks',
  'buffer',
  'child_process',
  'crypto',
  'dns',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
  'perf_hooks',
  'stream',
  'string_decoder',
  'timers',
  'tls',
  'url',
  'util',
  'v8',
  'zlib',
];

/**
 * A node that loads only {@link agentBuiltins} and waits, with the given Node flags: the floor
 * under any agent written for Node on this machine, before a line of its own code.
 */
export function builtinsNodeRss(flags = []) {
  const code = `Promise.all(${JSON.stringify(agentBuiltins)}.map((m) => import('node:' + m))).then(() => setTimeout(() => {}, 60_000))`;
  return waitingNodeRss([...flags, '-e', code], 2500);
}

/** rssParts of a node started with `args`, `settleMs` after it started; the node is then killed. */
async function waitingNodeRss(args, settleMs) {
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, settleMs));
    return rssParts(child.pid);
  } finally {
    child.kill('SIGKILL');
  }
}

/** `rss 71.2 MiB (anon 28.0, file 43.2)`. */
export const formatRss = (p) =>
  `${p.rss.toFixed(1)} MiB (anon ${p.anon.toFixed(1)}, file ${p.file.toFixed(1)})`;

/**
 * Samples rssParts every second for `ms` and returns the sample of median RSS, with the range:
 * a single reading lands anywhere in the heap's GC cycle (10 MiB apart with 110 pods).
 */
export async function medianRss(pid, ms) {
  const samples = [];
  for (const end = Date.now() + ms; Date.now() < end; ) {
    samples.push(rssParts(pid));
    await new Promise((r) => setTimeout(r, 1000));
  }
  samples.sort((a, b) => a.rss - b.rss);
  return {
    ...samples[Math.floor(samples.length / 2)],
    min: samples[0].rss,
    max: samples.at(-1).rss,
    n: samples.length,
  };
}

/** `72.1 MiB (anon 28.0, file 43.2; median of 20 samples, 70.3–75.0)`. */
export const formatMedianRss = (p) =>
  `${p.rss.toFixed(1)} MiB (anon ${p.anon.toFixed(1)}, file ${p.file.toFixed(1)}; median of ${p.n} samples a second apart, ${p.min.toFixed(1)}–${p.max.toFixed(1)})`;
