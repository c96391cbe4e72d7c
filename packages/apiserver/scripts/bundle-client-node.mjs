// Replaces tsc's dist/client-node.js (a re-export of the client-node values the adapters use)
// with a bundle of just those values: tree-shaken and minified, it loads in a tenth of the time
// and a fifth of the memory of client-node's index (see src/client-node.ts). Names are kept, so
// stack traces and `constructor.name` read as in client-node. Unit tests import the source, which
// is the plain re-export; the agent, the e2e tests and users of the package load the bundle.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { writeBundleLicences } from '../../../scripts/bundle-licences.mjs';
import { assertOneByteSources } from '../../../scripts/bundle-one-byte.mjs';

const pkgDir = path.resolve(import.meta.dirname, '..');
const outfile = path.join(pkgDir, 'dist/client-node.js');
const result = await build({
  absWorkingDir: pkgDir,
  entryPoints: [path.join(pkgDir, 'src/client-node.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  minify: true,
  keepNames: true,
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
  // Some of client-node's dependencies are CommonJS and require Node's built-ins; an ES module
  // has no `require` of its own.
  banner: {
    js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  },
});
// tsc's source map describes the re-export, not the bundle.
fs.rmSync(`${outfile}.map`, { force: true });
assertOneByteSources([outfile]);

// The bundle redistributes client-node and its dependencies: their licences go beside it.
writeBundleLicences(
  result.metafile,
  pkgDir,
  path.join(pkgDir, 'dist/client-node.licenses.txt'),
  'dist/client-node.js bundles these packages:',
);
