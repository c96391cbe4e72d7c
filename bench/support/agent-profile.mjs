// Preloaded into the agent (`--import`) by KUBELET_KIT_BENCH_AGENT_PROFILE=<dir> (see
// agent-process.mjs): an allocation profile that counts garbage too (V8's sampling heap profiler
// with the objects later collected by scavenges and mark-compacts included), written to
// <dir>/alloc-<pid>.heapprofile, and every 10 s a line of memory figures in <dir>/memory-<pid>.jsonl
// (process.memoryUsage, V8's heap spaces, /proc/self/smaps_rollup, GCs by kind). For finding where a
// long-running agent's memory goes; not for timing (the profiler costs CPU).
// KUBELET_KIT_BENCH_AGENT_PROFILE_ALLOC=0: the memory figures only (the profiler's samples of
// collected objects pile up in native memory).
import fs from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

const dir = process.env.KUBELET_KIT_BENCH_AGENT_PROFILE;
if (dir) {
  fs.mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
    );
  const alloc = process.env.KUBELET_KIT_BENCH_AGENT_PROFILE_ALLOC !== '0';
  if (alloc) {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', {
      samplingInterval: 64 * 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  const t0 = Date.now();
  // GCs so far by kind (perf_hooks' NODE_PERFORMANCE_GC_*: 1 minor, 2 major, 4 incremental,
  // 8 weak callbacks): count and milliseconds.
  const gcs = {};
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = e.detail?.kind ?? 0;
      gcs[kind] ??= { n: 0, ms: 0 };
      const g = gcs[kind];
      g.n++;
      g.ms = Math.round((g.ms + e.duration) * 10) / 10;
    }
  }).observe({ entryTypes: ['gc'] });
  const smaps = () => {
    const out = {};
    for (const line of fs.readFileSync('/proc/self/smaps_rollup', 'utf8').split('\n')) {
      const m = /^(\w+):\s+(\d+) kB/.exec(line);
      if (m) out[m[1]] = Number(m[2]);
    }
    return out;
  };
  const memFile = path.join(dir, `memory-${process.pid}.jsonl`);
  const writeProfile = async () => {
    const { profile } = await post('HeapProfiler.getSamplingProfile');
    fs.writeFileSync(path.join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(profile));
  };
  const timer = setInterval(() => {
    const spaces = Object.fromEntries(
      v8.getHeapSpaceStatistics().map((s) => [s.space_name, Math.round(s.space_size / 1024)]),
    );
    fs.appendFileSync(
      memFile,
      `${JSON.stringify({ t: Date.now() - t0, mem: process.memoryUsage(), spacesKiB: spaces, smaps: smaps(), gcs })}\n`,
    );
  }, 10_000);
  timer.unref();
  if (alloc) {
    const profileTimer = setInterval(() => void writeProfile().catch(() => {}), 60_000);
    profileTimer.unref();
    process.once('SIGUSR2', () => void writeProfile());
  }
}
