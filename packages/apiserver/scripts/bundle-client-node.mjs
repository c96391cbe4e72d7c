// Replaces tsc's dist/client-node.js (a re-export of the client-node values the adapters use)
// with a bundle of just those values: tree-shaken and minified, it loads in a tenth of the time
// and a fifth of the memory of client-node's index (see src/client-node.ts). Names are kept, so
// stack traces and `constructor.name` read as in client-node. Unit tests import the source, which
// is the plain re-export; the agent, the e2e tests and users of the package load the bundle.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const pkgDir = path.resolve(import.meta.dirname, '..');
const outfile = path.join(pkgDir, 'dist/client-node.js');
const result = await build({
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

// The bundle redistributes client-node and its dependencies: each one's licence goes beside it.
const packageDirs = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m) packageDirs.add(path.resolve(pkgDir, m[1]));
}
const notices = [...packageDirs]
  .map((dir) => {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const licenceFile = fs.readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
    const text = licenceFile ? fs.readFileSync(path.join(dir, licenceFile), 'utf8').trim() : '';
    return { id: `${pkg.name}@${pkg.version}`, licence: pkg.license ?? 'see the package', text };
  })
  .sort((a, b) => a.id.localeCompare(b.id))
  .map((n) => `${n.id} (${n.licence})\n\n${n.text}`.trim());
fs.writeFileSync(
  path.join(pkgDir, 'dist/client-node.licenses.txt'),
  `dist/client-node.js bundles these packages:\n\n${notices.join('\n\n----\n\n')}\n`,
);
