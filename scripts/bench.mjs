// Runs every benchmark (bench/*.bench.mjs, each in its own process, against the built packages)
// and writes bench/results.json plus a readable BENCHMARKS.md. A benchmark file prints, as its
// last line of stdout, a JSON array of measures: {"name","value","unit","target"?,"note"?}.
// `node scripts/bench.mjs pod-config` runs only the files whose name contains that word.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const filters = process.argv.slice(2);
const benchDir = path.join(root, 'bench');
const files = fs
  .readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => filters.length === 0 || filters.some((w) => f.includes(w)))
  .sort();

const resultsPath = path.join(benchDir, 'results.json');
const results = fs.existsSync(resultsPath) ? JSON.parse(fs.readFileSync(resultsPath, 'utf8')) : {};
let failed = 0;
for (const file of files) {
  console.log(`bench: ${file}`);
  const run = spawnSync(process.execPath, ['--expose-gc', path.join(benchDir, file)], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = (run.stdout ?? '').trim().split('\n');
  let measures;
  try {
    measures = JSON.parse(lines.at(-1) ?? '');
  } catch {
    measures = undefined;
  }
  if (run.status !== 0 || !Array.isArray(measures)) {
    failed++;
    console.error(`bench: ${file} failed (exit ${run.status})\n${lines.slice(-20).join('\n')}`);
    continue;
  }
  for (const m of measures) {
    results[m.name] = {
      value: m.value,
      unit: m.unit,
      ...(m.target !== undefined ? { target: m.target } : {}),
    };
    if (m.note) results[m.name].note = m.note;
    console.log(`  ${m.name} = ${m.value} ${m.unit}${m.target !== undefined ? ` (target ${m.target})` : ''}`);
  }
}
const sorted = Object.fromEntries(Object.entries(results).sort(([a], [b]) => a.localeCompare(b)));
fs.writeFileSync(resultsPath, `${JSON.stringify(sorted, null, 2)}\n`);
const rows = Object.entries(sorted).map(
  ([name, m]) => `| \`${name}\` | ${m.value} | ${m.unit} | ${m.target ?? ''} | ${m.note ?? ''} |`,
);
fs.writeFileSync(
  path.join(root, 'BENCHMARKS.md'),
  [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (see `bench/`). Ratios compare against the raw CRI floor measured in',
    'the same run; absolute times on shared 2-core machines are noisy, ratios less so.',
    '',
    '| measure | value | unit | target | note |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'),
);
process.exit(failed ? 1 : 0);
