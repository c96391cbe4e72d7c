// The packages as a user gets them: every package packed (`npm pack`), installed from the
// tarballs into fresh projects outside the workspace, type-checked by a strict consumer
// (`strict`, `skipLibCheck: false`, `module: nodenext`) that imports every entry point, and run:
// every entry point through `import` and through `require`, a file-source-only pod-config
// program in a project holding only pod-config and what it needs, and a runtime-only
// kuberuntime program over cri's in-memory CRI in a project holding only those, and the
// apiserver package's own bundle of client-node's parts.
// Needs `npm run build` first (scripts/test.sh does it) and the npm registry for third-party
// dependencies (`--prefer-offline`: the npm cache answers most of them).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const fixtures = fileURLToPath(new URL('./fixtures', import.meta.url));
const tsc = path.join(root, 'node_modules/typescript/lib/tsc.js');

interface Manifest {
  name: string;
  private?: boolean;
  exports?: Record<string, { types?: string; import?: string; default?: string }>;
  dependencies?: Record<string, string>;
}

const packages = fs
  .readdirSync(path.join(root, 'packages'))
  .sort()
  .map((d) => path.join(root, 'packages', d))
  .filter((d) => fs.existsSync(path.join(d, 'package.json')))
  .map((dir) => ({
    dir,
    pkg: JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest,
  }))
  .filter(({ pkg }) => !pkg.private);
const names = new Set(packages.map(({ pkg }) => pkg.name));

/** Every specifier a user can import: `@kubelet-kit/x` and `@kubelet-kit/x/sub` for `./sub`. */
const specifiers = packages.flatMap(({ pkg }) =>
  Object.keys(pkg.exports ?? { '.': {} }).map((key) =>
    key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
  ),
);

// Lifecycle variables of the `npm test` that runs us would point the npm below at the workspace.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^npm_(?!config_(registry|cache|userconfig)$)/i.test(k)),
);

/** Runs a command; on failure, the error says which command, where, and what it printed. */
async function sh(cmd: string, args: string[], cwd: string, timeout = 120_000): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { cwd, env, timeout, maxBuffer: 64 << 20 });
    return stdout;
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    const tail = (s = '') => (s.length > 6000 ? `…${s.slice(-6000)}` : s);
    throw new Error(
      `\`${path.basename(cmd)} ${args.join(' ')}\` in ${cwd} failed: ${err.message.split('\n')[0]}\n` +
        `--- stdout\n${tail(err.stdout)}\n--- stderr\n${tail(err.stderr)}`,
    );
  }
}

/** The package and every @kubelet-kit package it needs, transitively. */
function closure(name: string, into = new Set<string>()): Set<string> {
  if (into.has(name)) return into;
  into.add(name);
  const found = packages.find(({ pkg }) => pkg.name === name);
  if (!found) throw new Error(`no package ${name} in packages/`);
  for (const dep of Object.keys(found.pkg.dependencies ?? {})) if (names.has(dep)) closure(dep, into);
  return into;
}

let work = '';
const tarballs = new Map<string, string>();

/** A fresh project in `work/<name>` with the tarballs of `pkgs` (and their closure) installed. */
async function project(name: string, pkgs: string[], extra: string[] = []): Promise<string> {
  const dir = path.join(work, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: `kk-consumer-${name}`, private: true, type: 'module' }, null, 2),
  );
  const wanted = new Set<string>();
  for (const p of pkgs) closure(p, wanted);
  const files = [...wanted].map((n) => {
    const file = tarballs.get(n);
    if (!file) throw new Error(`${n} was not packed`);
    return file;
  });
  await sh(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', ...files, ...extra],
    dir,
    240_000,
  );
  return dir;
}

/** Kilobytes under `dir/node_modules`. */
async function du(dir: string): Promise<number> {
  return Number((await sh('du', ['-sk', path.join(dir, 'node_modules')], dir)).split('\t')[0]);
}

/** Writes the consumer's programs into `dir/src` and compiles them; returns the errors, if any. */
async function compile(dir: string, tsconfig: object): Promise<string> {
  const src = path.join(dir, 'src');
  fs.mkdirSync(src);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  const id = (i: number) => `m${i}`;
  const counts = `const entries: Record<string, number> = {\n${specifiers.map((s, i) => `  '${s}': Object.keys(${id(i)}).length,\n`).join('')}};\nconsole.log(JSON.stringify(entries));\n`;
  fs.writeFileSync(
    path.join(src, 'entries.ts'),
    specifiers.map((s, i) => `import * as ${id(i)} from '${s}';\n`).join('') + counts,
  );
  // CommonJS users: `require` of an ES module, which Node 20.19+ does when `default` matches.
  fs.writeFileSync(
    path.join(src, 'entries-cjs.cts'),
    specifiers.map((s, i) => `import ${id(i)} = require('${s}');\n`).join('') + counts,
  );
  for (const f of ['file-source.ts', 'runtime.ts', 'client-node.ts'])
    fs.copyFileSync(path.join(fixtures, f), path.join(src, f));
  return sh(process.execPath, [tsc, '-p', dir], dir).then(
    () => '',
    (e: Error) => e.message,
  );
}

let full = '';
let fileOnly = '';
let runtimeOnly = '';
let typeErrors = '';

beforeAll(async () => {
  for (const { dir, pkg } of packages) {
    for (const entry of Object.values(pkg.exports ?? {})) {
      const target = entry.import ?? entry.default;
      if (target && !fs.existsSync(path.join(dir, target))) {
        throw new Error(`${pkg.name}: ${target} is missing; run \`npm run build\` first`);
      }
    }
  }
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-consumer-'));
  const packs = path.join(work, 'packs');
  fs.mkdirSync(packs);
  const out = await sh(
    'npm',
    ['pack', '--workspaces', '--json', '--ignore-scripts', '--pack-destination', packs],
    root,
  );
  for (const p of JSON.parse(out) as { name: string; filename: string }[]) {
    tarballs.set(p.name, path.join(packs, p.filename));
  }

  // The user's compiler settings: strict, and the published .d.ts checked too.
  const tsconfig = {
    compilerOptions: {
      strict: true,
      skipLibCheck: false,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      lib: ['es2023'],
      types: ['node'],
      rootDir: 'src',
      outDir: 'build',
      // Emit despite type errors, so one type error does not hide what the programs would do.
      noEmitOnError: false,
    },
    include: ['src'],
  };
  const typesNode = `@types/node@${JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).devDependencies['@types/node']}`;
  // The type check of the full project overlaps the installs of the small ones.
  await Promise.all([
    project('full', [...names], [typesNode]).then(async (dir) => {
      full = dir;
      typeErrors = await compile(dir, tsconfig);
    }),
    project('file-only', ['@kubelet-kit/pod-config']).then((dir) => {
      fileOnly = dir;
    }),
    project('runtime-only', ['@kubelet-kit/kuberuntime', '@kubelet-kit/cri']).then((dir) => {
      runtimeOnly = dir;
    }),
  ]);
}, 300_000);

afterAll(() => {
  if (work && !process.env.KK_KEEP_CONSUMER) fs.rmSync(work, { recursive: true, force: true });
});

describe('consumer of the packed packages', () => {
  it('type-checks a strict program that imports every entry point', () => {
    expect(typeErrors).toBe('');
    expect(fs.existsSync(path.join(full, 'build/entries.js'))).toBe(true);
  });

  it('imports every entry point', async () => {
    const entries = JSON.parse(await sh(process.execPath, ['build/entries.js'], full));
    expect(Object.keys(entries).sort()).toEqual([...specifiers].sort());
    for (const s of specifiers) expect(entries[s], s).toBeGreaterThan(0);
  });

  it('requires every entry point from CommonJS', async () => {
    const entries = JSON.parse(await sh(process.execPath, ['build/entries-cjs.cjs'], full));
    for (const s of specifiers) expect(entries[s], s).toBeGreaterThan(0);
    const core = await sh(
      process.execPath,
      [
        '-e',
        'console.log(typeof require("@kubelet-kit/core").Backoff, typeof require("@kubelet-kit/core/testing").FakeClock)',
      ],
      full,
    );
    expect(core.trim()).toBe('function function');
  });

  it('reads a manifest directory with pod-config alone', async () => {
    const manifests = path.join(work, 'manifests');
    fs.mkdirSync(manifests);
    for (const name of ['web', 'sleeper']) {
      fs.writeFileSync(
        path.join(manifests, `${name}.yaml`),
        `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers: [{name: main, image: busybox:1.36}]\n`,
      );
    }
    fs.copyFileSync(path.join(full, 'build/file-source.js'), path.join(fileOnly, 'file-source.js'));
    const out = JSON.parse(await sh(process.execPath, ['file-source.js', manifests], fileOnly));
    expect(out).toMatchObject({ pods: ['default/sleeper-node-1', 'default/web-node-1'], errors: [] });
    const kb = await du(fileOnly);
    console.log(`file-source-only install of pod-config: node_modules ${(kb / 1024).toFixed(1)} MiB`);
    fs.mkdirSync(path.join(root, '.tmp'), { recursive: true });
    fs.writeFileSync(
      path.join(root, '.tmp/consumer-sizes.json'),
      JSON.stringify({ podConfigFileOnlyKiB: kb }),
    );
  });

  it('starts a pod with kuberuntime over the in-memory CRI alone', async () => {
    fs.copyFileSync(path.join(full, 'build/runtime.js'), path.join(runtimeOnly, 'runtime.js'));
    const out = JSON.parse(await sh(process.execPath, ['runtime.js'], runtimeOnly));
    expect(out).toMatchObject({ sandbox: 'ready', containers: ['app:running'] });
  });

  it("loads apiserver's client-node parts from its bundle, not client-node's modules", async () => {
    const out = JSON.parse(await sh(process.execPath, ['build/client-node.js'], full));
    expect(out).toMatchObject({
      viaOwn: ['web'],
      resourceVersion: '7',
      mixed: ['web'],
      reverse: ['web'],
      authorizations: ['Bearer secret-token', 'Bearer secret-token', 'Bearer secret-token'],
      clientNodeModulesBefore: 0,
    });
    // The check of the hook itself: client-node's index, once imported, is seen.
    expect(out.clientNodeModulesAfter).toBeGreaterThan(100);
  });
});
