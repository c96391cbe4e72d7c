// tsc compiles src/generated/types.ts and services.ts but does not copy the pbjs output
// (a .js with its own .d.ts); copy it next to the compiled files.
import fs from 'node:fs';
import path from 'node:path';

const pkgDir = path.resolve(import.meta.dirname, '..');
const from = path.join(pkgDir, 'src/generated');
const to = path.join(pkgDir, 'dist/generated');
fs.mkdirSync(to, { recursive: true });
for (const file of ['cri.js', 'cri.d.ts']) fs.copyFileSync(path.join(from, file), path.join(to, file));
