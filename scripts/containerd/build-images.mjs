// Builds the two OCI image archives the private containerd imports: a busybox image with every
// applet of the host's static busybox, and a sandbox ("pause") image that only sleeps. No
// registry, docker or network: the tarballs are written byte by byte, deterministically, so
// the same busybox always yields the same digests.
//
// usage: node build-images.mjs <busybox-binary> <out-dir> <busybox-image-name> <pause-image-name>
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [busyboxPath, outDir, busyboxName, pauseName] = process.argv.slice(2);
if (!busyboxPath || !outDir || !busyboxName || !pauseName) {
  console.error('usage: build-images.mjs <busybox-binary> <out-dir> <busybox-image> <pause-image>');
  process.exit(2);
}

const arch = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' }[process.arch];
if (!arch) throw new Error(`unsupported architecture ${process.arch}`);
// Fixed timestamps keep the archives reproducible.
const MTIME = 0;
const CREATED = '1970-01-01T00:00:00Z';

// --- a minimal ustar writer ------------------------------------------------------------------
function header(name, { mode, size = 0, type, linkname = '' }) {
  const h = Buffer.alloc(512, 0);
  if (Buffer.byteLength(name) > 100) throw new Error(`tar name too long: ${name}`);
  const field = (off, len, value) => h.write(value, off, len, 'utf8');
  const octal = (off, len, n) => field(off, len, `${n.toString(8).padStart(len - 1, '0')}\0`);
  field(0, 100, name);
  octal(100, 8, mode);
  octal(108, 8, 0); // uid
  octal(116, 8, 0); // gid
  octal(124, 12, size);
  octal(136, 12, MTIME);
  field(148, 8, '        '); // checksum placeholder: spaces while summing
  field(156, 1, type);
  field(157, 100, linkname);
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  field(265, 32, 'root');
  field(297, 32, 'root');
  let sum = 0;
  for (const b of h) sum += b;
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

function tar(entries) {
  const parts = [];
  for (const e of entries) {
    if (e.type === 'dir') parts.push(header(`${e.name}/`, { mode: e.mode ?? 0o755, type: '5' }));
    else if (e.type === 'symlink') parts.push(header(e.name, { mode: 0o777, type: '2', linkname: e.target }));
    else {
      parts.push(header(e.name, { mode: e.mode ?? 0o644, size: e.data.length, type: '0' }));
      parts.push(e.data);
      const pad = (512 - (e.data.length % 512)) % 512;
      if (pad) parts.push(Buffer.alloc(pad, 0));
    }
  }
  parts.push(Buffer.alloc(1024, 0));
  return Buffer.concat(parts);
}

const sha256 = (buf) => `sha256:${createHash('sha256').update(buf).digest('hex')}`;

// --- the root filesystem -----------------------------------------------------------------------
const busybox = readFileSync(busyboxPath);
const applets = execFileSync(busyboxPath, ['--list-full'], { encoding: 'utf8' })
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && l !== 'bin/busybox')
  .sort();
if (!applets.includes('bin/sh')) throw new Error(`${busyboxPath} lists no bin/sh applet`);

const dirs = new Map([
  ['bin', 0o755],
  ['dev', 0o755],
  ['etc', 0o755],
  ['home', 0o755],
  ['proc', 0o555],
  ['root', 0o700],
  ['sbin', 0o755],
  ['sys', 0o555],
  ['tmp', 0o1777],
  ['usr', 0o755],
  ['usr/bin', 0o755],
  ['usr/sbin', 0o755],
  ['var', 0o755],
  ['var/run', 0o755],
  ['var/tmp', 0o1777],
  ['var/www', 0o755],
]);
for (const a of applets) {
  const parts = a.split('/').slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    const d = parts.slice(0, i).join('/');
    if (!dirs.has(d)) dirs.set(d, 0o755);
  }
}

const text = (s) => Buffer.from(s, 'utf8');
const entries = [
  ...[...dirs.keys()].sort().map((name) => ({ type: 'dir', name, mode: dirs.get(name) })),
  { type: 'file', name: 'bin/busybox', mode: 0o755, data: busybox },
  ...applets.map((name) => ({ type: 'symlink', name, target: '/bin/busybox' })),
  {
    type: 'file',
    name: 'etc/passwd',
    data: text(
      'root:x:0:0:root:/root:/bin/sh\n' +
        'daemon:x:1:1:daemon:/usr/sbin:/bin/false\n' +
        'www-data:x:33:33:www-data:/var/www:/bin/false\n' +
        'nobody:x:65534:65534:nobody:/home:/bin/false\n',
    ),
  },
  {
    type: 'file',
    name: 'etc/group',
    data: text('root:x:0:\ndaemon:x:1:\nwww-data:x:33:\nusers:x:100:\nnogroup:x:65534:\n'),
  },
  { type: 'file', name: 'etc/shadow', mode: 0o640, data: text('root:*::0:::::\nnobody:*::0:::::\n') },
  { type: 'file', name: 'etc/nsswitch.conf', data: text('hosts: files dns\n') },
  { type: 'file', name: 'var/www/index.html', data: text('kubelet-kit busybox\n') },
];
const layer = tar(entries);
const layerDigest = sha256(layer);

// --- image config, manifest, layout ----------------------------------------------------------
const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function archive(name, imageConfig, comment) {
  const config = text(
    JSON.stringify({
      created: CREATED,
      architecture: arch,
      os: 'linux',
      config: { Env: [PATH], WorkingDir: '/', ...imageConfig },
      rootfs: { type: 'layers', diff_ids: [layerDigest] },
      history: [{ created: CREATED, created_by: comment }],
    }),
  );
  const manifest = text(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: sha256(config),
        size: config.length,
      },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length },
      ],
    }),
  );
  const index = text(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: sha256(manifest),
          size: manifest.length,
          // ctr import names the image after this annotation.
          annotations: { 'io.containerd.image.name': name },
          platform: { architecture: arch, os: 'linux' },
        },
      ],
    }),
  );
  const blob = (buf) => ({ type: 'file', name: `blobs/sha256/${sha256(buf).slice(7)}`, data: buf });
  return tar([
    { type: 'file', name: 'oci-layout', data: text('{"imageLayoutVersion":"1.0.0"}') },
    { type: 'file', name: 'index.json', data: index },
    { type: 'dir', name: 'blobs' },
    { type: 'dir', name: 'blobs/sha256' },
    blob(layer),
    blob(config),
    blob(manifest),
  ]);
}

mkdirSync(outDir, { recursive: true });
const write = (file, buf) => {
  // Write then rename, so a reader never sees half an archive.
  const tmp = join(outDir, `.${file}.tmp`);
  writeFileSync(tmp, buf);
  renameSync(tmp, join(outDir, file));
};
write('busybox.tar', archive(busyboxName, { Cmd: ['sh'] }, `busybox-static with ${applets.length} applets`));
write(
  'pause.tar',
  archive(pauseName, { Entrypoint: ['/bin/sleep', '2147483647'] }, 'sandbox: sleep forever'),
);
console.log(`build-images: ${applets.length} applets, layer ${layerDigest}`);
