// Bundles the built CLI (dist/cli.js, with every kubelet-kit package and library it loads) into
// dist/agent/, which the `kubelet-kit` command runs: comments and whitespace out, identifiers
// kept, split at the CLI's dynamic imports so that what a configuration does not use (the
// API-server clients, the simulator) stays out of memory. The agent's ~250 modules as tsc writes
// them, comments and all, cost it about 3 MiB more RSS idle than this (see the README's
// "Footprint"). Minified identifiers saved 3 MiB more, but the names esbuild's keepNames then
// puts back at run time cost CPU, and without it logs would name errors by mangled classes.
// dist/cli.js stays, the same program unbundled, for readable stack traces. Runs after the other
// packages' builds (scripts/build.mjs runs postbuild steps in directory order, and it needs
// apiserver's and cri's).
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { writeBundleLicences } from '../../../scripts/bundle-licences.mjs';
import { assertOneByteSources } from '../../../scripts/bundle-one-byte.mjs';

const pkgDir = path.resolve(import.meta.dirname, '..');
const outdir = path.join(pkgDir, 'dist/agent');
fs.rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: pkgDir,
  entryPoints: [path.join(pkgDir, 'dist/cli.js')],
  outdir,
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  metafile: true,
  logLevel: 'error',
  // CommonJS dependencies require Node's built-ins, and an ES module has no `require`. The
  // modules the code itself loads through createRequire (yaml, kubernetes-models) are not
  // bundled: they resolve from here as from dist/.
  banner: {
    js: "import { createRequire as __kkCreateRequire } from 'node:module'; const require = __kkCreateRequire(import.meta.url);",
  },
});
// The CLI's first import only sets V8 flags (apply-v8-tuning.ts); a bundler drops a module
// imported for its side effects when package.json's `sideEffects` does not name it, and the agent
// would run untuned (it did, once: more CPU and a heap 8 MiB larger with 110 pods).
const entry = fs.readFileSync(path.join(outdir, 'cli.js'), 'utf8');
if (!entry.includes('--heap-growing-percent=')) {
  throw new Error(
    'bundle-agent: dist/agent/cli.js lost the V8 tuning (is apply-v8-tuning.js in sideEffects?)',
  );
}
assertOneByteSources(Object.keys(result.metafile.outputs).map((file) => path.resolve(pkgDir, file)));
writeBundleLicences(
  result.metafile,
  pkgDir,
  path.join(outdir, 'licenses.txt'),
  'The files in this folder bundle these packages besides kubelet-kit:',
);
