// Checks that every package packs alone (`npm pack --dry-run` in its folder) with its built
// entry points, README, LICENSE and no tests or sources of other packages.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
let failed = 0;
for (const name of fs.readdirSync(path.join(root, 'packages')).sort()) {
  const dir = path.join(root, 'packages', name);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: dir,
    encoding: 'utf8',
  });
  const files = new Set(JSON.parse(out)[0].files.map((f) => f.path));
  const wanted = ['README.md', 'LICENSE', 'package.json'];
  for (const entry of Object.values(pkg.exports)) {
    wanted.push(entry.import.replace(/^\.\//, ''), entry.types.replace(/^\.\//, ''));
  }
  for (const bin of Object.values(pkg.bin ?? {})) wanted.push(bin.replace(/^\.\//, ''));
  const missing = wanted.filter((f) => !files.has(f));
  const stray = [...files].filter(
    (f) => f.startsWith('test/') || f.startsWith('src/') || f.endsWith('.tsbuildinfo'),
  );
  if (missing.length || stray.length) {
    failed++;
    console.error(
      `pack: ${pkg.name}: missing ${missing.join(', ') || '-'}; should not ship ${stray.join(', ') || '-'}`,
    );
  } else {
    console.log(`pack: ${pkg.name} ok (${files.size} files)`);
  }
}
process.exit(failed ? 1 : 0);
