// Checks every package as it is published: packs them all (`npm pack --workspaces`, one run,
// into a temp folder, offline) and, for each tarball,
//   - package.json: `types`, `import` and `default` in every `exports` entry, repository links;
//   - contents: every target of its `exports` and `bin`, README, LICENSE, package.json; no
//     tests, sources or .tsbuildinfo;
//   - source maps: each carries its sources (`sourcesContent`), since `src/` is not shipped;
//   - @types/ws exactly when the declarations reach @kubernetes/client-node;
//   - publint (strict: warnings fail too);
//   - Are The Types Wrong (what `attw --pack --profile esm-only` checks), in-process so the
//     whole check stays a few seconds.
// Run after `npm run build`. `node scripts/pack-check.mjs core cri` checks only those folders.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core';
import { problemKindInfo } from '@arethetypeswrong/core/problems';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';

// attw's esm-only profile: our packages are ES modules only, on purpose.
// - node16-cjs: attw models a TypeScript `require` that cannot load ESM and reports
//   CJSResolvesToESM; Node 20.19+/22.12+ do load it (`require(esm)`, through the `default`
//   condition), which test/consumer runs for real on every entry point.
// - node10: the pre-`exports` resolution (`moduleResolution: node`, deprecated) cannot see
//   subpaths like `/testing` at all, and cannot load ESM either.
const ignoreResolutions = ['node10', 'node16-cjs'];

const root = path.resolve(import.meta.dirname, '..');
const only = process.argv.slice(2);
const dirs = fs
  .readdirSync(path.join(root, 'packages'))
  .sort()
  .filter(
    (d) =>
      (only.length === 0 || only.includes(d)) &&
      fs.existsSync(path.join(root, 'packages', d, 'package.json')),
  );

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-pack-check-'));
let failed = 0;
try {
  const args = ['pack', '--json', '--ignore-scripts', '--pack-destination', tmp];
  for (const d of dirs) args.push('--workspace', `packages/${d}`);
  const packed = new Map(
    JSON.parse(execFileSync('npm', args, { cwd: root, encoding: 'utf8' })).map((p) => [p.name, p]),
  );

  for (const d of dirs) {
    const dir = path.join(root, 'packages', d);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const pack = packed.get(pkg.name);
    if (!pack) {
      failed++;
      console.error(`pack: ${pkg.name}: not packed`);
      continue;
    }
    const problems = [];
    const tarball = fs.readFileSync(path.join(tmp, pack.filename));

    // Contents.
    const files = new Set(pack.files.map((f) => f.path));
    const targets = (v) => (typeof v === 'string' ? [v] : Object.values(v ?? {}).flatMap(targets));
    const wanted = new Set(['README.md', 'LICENSE', 'package.json']);
    for (const t of [...targets(pkg.exports), ...targets(pkg.bin)]) wanted.add(t.replace(/^\.\//, ''));
    const missing = [...wanted].filter((f) => !files.has(f));
    const stray = [...files].filter(
      (f) => f.startsWith('test/') || f.startsWith('src/') || f.endsWith('.tsbuildinfo'),
    );
    if (missing.length) problems.push(`missing ${missing.join(', ')}`);
    if (stray.length) problems.push(`should not ship ${stray.join(', ')}`);

    // What every package.json carries: a require(esm)-able entry (see the root README) and the
    // links npm shows.
    for (const [sub, entry] of Object.entries(pkg.exports ?? {})) {
      if (typeof entry !== 'object' || !entry.types || !entry.import || entry.default !== entry.import) {
        problems.push(`exports["${sub}"] wants types, import and default (= import)`);
      }
    }
    if (pkg.repository?.directory !== `packages/${d}`)
      problems.push(`repository.directory is not packages/${d}`);
    if (!pkg.homepage || !pkg.bugs) problems.push('no homepage or bugs');

    // Source maps, read from the tarball itself.
    const attwPkg = createPackageFromTarballData(new Uint8Array(tarball));
    const prefix = `/node_modules/${pkg.name}/`;
    let maps = 0;
    for (const file of attwPkg.listFiles().filter((f) => f.endsWith('.map'))) {
      maps++;
      const map = JSON.parse(attwPkg.readFile(file));
      const content = map.sourcesContent ?? [];
      if (map.sources.some((_, i) => typeof content[i] !== 'string')) {
        problems.push(`${file.slice(prefix.length)} has no sourcesContent`);
      }
    }

    // client-node's .d.ts import `ws`, which has no types of its own: a package whose
    // declarations reach client-node ships @types/ws, or strict consumers fail with TS7016.
    const reachesClientNode = attwPkg
      .listFiles()
      .some(
        (f) =>
          f.endsWith('.d.ts') &&
          /(?:from\s*|import\()['"]@kubernetes\/client-node['"/]/.test(attwPkg.readFile(f)),
      );
    const hasTypesWs = Boolean(pkg.dependencies?.['@types/ws']);
    if (reachesClientNode && !hasTypesWs)
      problems.push('types import @kubernetes/client-node: add @types/ws');
    if (!reachesClientNode && hasTypesWs)
      problems.push('@types/ws is a dependency but no type reaches client-node');

    // publint.
    const bytes = tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength);
    const lint = await publint({ pack: { tarball: bytes }, strict: true });
    for (const m of lint.messages) problems.push(`publint ${m.type}: ${formatMessage(m, pkg) ?? m.code}`);

    // Are The Types Wrong.
    const analysis = await checkPackage(attwPkg);
    if (analysis.types) {
      for (const p of analysis.problems) {
        if ('resolutionKind' in p && ignoreResolutions.includes(p.resolutionKind)) continue;
        const where = 'entrypoint' in p ? ` (${p.entrypoint}, ${p.resolutionKind})` : '';
        problems.push(`attw ${p.kind}${where}: ${problemKindInfo[p.kind]?.description ?? ''}`);
      }
    } else {
      problems.push('attw: no types found');
    }

    if (problems.length) {
      failed++;
      for (const p of problems) console.error(`pack: ${pkg.name}: ${p}`);
    } else {
      console.log(`pack: ${pkg.name} ok (${files.size} files, ${maps} source maps, publint, attw)`);
    }
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
