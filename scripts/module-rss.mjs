// What each module costs a process, for footprint work: imports the given specifiers in turn
// (resolved from the repository root, so dependencies and `@kubelet-kit/*` both resolve) and
// prints, after two full GCs each, the growth of VmRSS, V8's used heap and external memory.
// Later imports pay only for what earlier ones did not load; the first pays Node's ESM loader.
//   npm run build && node --expose-gc scripts/module-rss.mjs commander pino @grpc/grpc-js @kubelet-kit/cri
// A specifier prefixed with `require:` is loaded with require (a package's CommonJS build).
import fs from 'node:fs';
import { createRequire } from 'node:module';

if (!globalThis.gc) {
  console.error('module-rss: run with node --expose-gc');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const mib = (x) => (x / 2 ** 20).toFixed(1);
const snap = () => {
  globalThis.gc();
  globalThis.gc();
  const m = /^VmRSS:\s+(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  const u = process.memoryUsage();
  return { rss: Number(m?.[1]) * 1024, heap: u.heapUsed, ext: u.external };
};
let prev = snap();
console.log(`start: rss ${mib(prev.rss)} MiB, heap ${mib(prev.heap)} MiB`);
for (const spec of process.argv.slice(2)) {
  if (spec.startsWith('require:')) require(spec.slice('require:'.length));
  else await import(spec);
  await new Promise((r) => setTimeout(r, 50));
  const s = snap();
  console.log(
    `${spec}: rss +${mib(s.rss - prev.rss)}, heap +${mib(s.heap - prev.heap)}, external +${mib(s.ext - prev.ext)} MiB (rss ${mib(s.rss)})`,
  );
  prev = s;
}
