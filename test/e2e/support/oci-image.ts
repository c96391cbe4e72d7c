import { createHash } from 'node:crypto';

// A tiny OCI image archive (one layer of one file), for tests that need images distinct from the
// busybox and pause ones (own IDs, so removing one removes nothing else). `ctr images import`
// names it after the `io.containerd.image.name` annotation.

function header(name: string, size: number, type: '0' | '5'): Buffer {
  const h = Buffer.alloc(512, 0);
  const octal = (off: number, len: number, n: number) =>
    h.write(`${n.toString(8).padStart(len - 1, '0')}\0`, off, len, 'utf8');
  h.write(name, 0, 100, 'utf8');
  octal(100, 8, type === '5' ? 0o755 : 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);
  h.write('        ', 148, 8, 'utf8');
  h.write(type, 156, 1, 'utf8');
  h.write('ustar\0', 257, 6, 'utf8');
  h.write('00', 263, 2, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'utf8');
  return h;
}

function tar(entries: ReadonlyArray<{ name: string; data?: Buffer }>): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (!e.data) {
      parts.push(header(`${e.name}/`, 0, '5'));
      continue;
    }
    parts.push(header(e.name, e.data.length, '0'), e.data);
    const pad = (512 - (e.data.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(1024, 0));
  return Buffer.concat(parts);
}

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const json = (v: unknown) => Buffer.from(JSON.stringify(v));

/** An OCI archive of an image `name` holding `/<file>` with `content`. */
export function tinyImageArchive(name: string, content: string): Buffer {
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
  const layer = tar([{ name: 'hello.txt', data: Buffer.from(content) }]);
  const config = json({
    architecture: arch,
    os: 'linux',
    config: { Cmd: ['/hello.txt'] },
    rootfs: { type: 'layers', diff_ids: [sha256(layer)] },
  });
  const manifest = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: {
      mediaType: 'application/vnd.oci.image.config.v1+json',
      digest: sha256(config),
      size: config.length,
    },
    layers: [
      { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: sha256(layer), size: layer.length },
    ],
  });
  const index = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      {
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: sha256(manifest),
        size: manifest.length,
        annotations: { 'io.containerd.image.name': name },
        platform: { architecture: arch, os: 'linux' },
      },
    ],
  });
  const blob = (b: Buffer) => ({ name: `blobs/sha256/${sha256(b).slice(7)}`, data: b });
  return tar([
    { name: 'oci-layout', data: json({ imageLayoutVersion: '1.0.0' }) },
    { name: 'index.json', data: index },
    { name: 'blobs' },
    { name: 'blobs/sha256' },
    blob(layer),
    blob(config),
    blob(manifest),
  ]);
}
