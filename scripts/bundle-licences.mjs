// The licences of the third-party packages an esbuild bundle holds, for the file written beside
// it: a bundle redistributes their code, so each one's licence text goes with it.
import fs from 'node:fs';
import path from 'node:path';

/**
 * Writes `outFile`: every package under node_modules that `metafile` (esbuild's, with its input
 * paths relative to `workingDir`) took code from, with its version, licence and licence text. An
 * input that is itself a bundle (`x.js` with an `x.licenses.txt` beside it) adds that file's list.
 */
export function writeBundleLicences(metafile, workingDir, outFile, title) {
  const packageDirs = new Set();
  const nested = [];
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) packageDirs.add(path.resolve(workingDir, m[1]));
    const list = path.resolve(workingDir, input.replace(/\.js$/, '.licenses.txt'));
    if (input.endsWith('.js') && fs.existsSync(list)) nested.push(fs.readFileSync(list, 'utf8').trim());
  }
  const notices = [...packageDirs]
    .map((dir) => {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
      const licenceFile = fs.readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
      const text = licenceFile ? fs.readFileSync(path.join(dir, licenceFile), 'utf8').trim() : '';
      return { id: `${pkg.name}@${pkg.version}`, licence: pkg.license ?? 'see the package', text };
    })
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((n) => `${n.id} (${n.licence})\n\n${n.text}`.trim())
    .concat(nested);
  fs.writeFileSync(outFile, `${title}\n\n${notices.join('\n\n----\n\n')}\n`);
}
