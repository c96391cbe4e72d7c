// The codec once loaded protobufjs' static module from dist/generated/cri.js (copied here after
// tsc); it now reads the tables in wire-types.ts. A dist built before then still holds the copy,
// which would be published with the package.
import fs from 'node:fs';
import path from 'node:path';

const to = path.join(path.resolve(import.meta.dirname, '..'), 'dist/generated');
for (const stale of ['cri.js', 'cri.d.ts']) fs.rmSync(path.join(to, stale), { force: true });
