// Node's names for the platform and CPU, as Go's GOOS and GOARCH spell them: what upstream's
// kubelet writes in its Node's labels and nodeInfo and in its User-Agent.

const goArchByNodeArch: Readonly<Record<string, string>> = {
  x64: 'amd64',
  ia32: '386',
  arm: 'arm',
  arm64: 'arm64',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips: 'mips',
  mipsel: 'mipsle',
};

/**
 * Go's `GOOS` for a Node.js `process.platform` name (default this process's).
 *
 * @public
 */
export function goOS(platform: string = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}

/**
 * Go's `GOARCH` for a Node.js `process.arch` name (default this process's).
 *
 * @public
 */
export function goArch(arch: string = process.arch): string {
  return goArchByNodeArch[arch] ?? arch;
}
