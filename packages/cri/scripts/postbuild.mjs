// tsc compiles src/generated/types.ts and services.ts but does not copy the pbjs output
// (a .js with its own .d.ts); copy the .js next to the compiled files. Its .d.ts stays out of
// dist: no published declaration refers to it (codec.ts hides the protobufjs classes behind
// its own types), and it is 728 kB that imports `long`, which we do not depend on.
import fs from 'node:fs';
import path from 'node:path';

const pkgDir = path.resolve(import.meta.dirname, '..');
const from = path.join(pkgDir, 'src/generated');
const to = path.join(pkgDir, 'dist/generated');
fs.mkdirSync(to, { recursive: true });
fs.copyFileSync(path.join(from, 'cri.js'), path.join(to, 'cri.js'));
// A dist built before this change still holds the copy.
fs.rmSync(path.join(to, 'cri.d.ts'), { force: true });
