// Builds every package: code generation first (packages with a "gen" script), then one
// `tsc -b` over the project references, then each package's "postbuild" step if it has one.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const pkgDirs = fs
  .readdirSync(path.join(root, 'packages'))
  .map((d) => path.join(root, 'packages', d))
  .filter((d) => fs.existsSync(path.join(d, 'package.json')));

function runScript(stage) {
  for (const dir of pkgDirs) {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    if (pkg.scripts?.[stage]) execFileSync('npm', ['run', stage], { cwd: dir, stdio: 'inherit' });
  }
}

runScript('gen');
execFileSync(path.join(root, 'node_modules/.bin/tsc'), ['-b', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
runScript('postbuild');
