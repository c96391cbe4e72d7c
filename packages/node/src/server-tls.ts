// The kubelet API's serving certificate (upstream `InitializeTLS` in cmd/kubelet/app/server.go):
// `--tls-cert-file`/`--tls-private-key-file` when given, else a self-signed pair kept in
// `<cert-dir>/kubelet.crt|.key` and reused on the next start.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { SecureContextOptions } from 'node:tls';

/** The TLS settings of the kubelet API (upstream's flags of the same names). @public */
export interface KubeletTlsOptions {
  readonly certFile?: string;
  readonly privateKeyFile?: string;
  /** Where the self-signed pair goes without the two files; upstream default `<root-dir>/pki`. */
  readonly certDirectory?: string;
  /** `--client-ca-file`: client certificates signed by these CAs authenticate. */
  readonly clientCAFile?: string;
  /** `--tls-min-version`: VersionTLS12 or VersionTLS13 (Node's TLS has no 1.0/1.1 by default). */
  readonly minVersion?: string;
  /** `--tls-cipher-suites`: IANA names, mapped to OpenSSL's for TLS 1.2. */
  readonly cipherSuites?: readonly string[];
}

/** The key and certificate the HTTPS server uses, with the client CA when given. @internal */
export interface ServingTls {
  readonly key: string | Buffer;
  readonly cert: string | Buffer;
  readonly ca?: Buffer;
  readonly minVersion?: SecureContextOptions['minVersion'];
  readonly ciphers?: string;
}

const tlsVersions: Readonly<Record<string, SecureContextOptions['minVersion']>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

function readFile(flag: string, file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new Error(`${flag} ${file}: ${(err as Error).message}`);
  }
}

/** IANA cipher suite names (Go's) as OpenSSL names them. */
function opensslCipher(name: string): string {
  const m =
    /^TLS_ECDHE_(RSA|ECDSA)_WITH_(AES_128|AES_256|CHACHA20_POLY1305)(?:_(GCM|CBC))?(?:_(SHA256|SHA384|SHA))?$/.exec(
      name,
    );
  if (!m) throw new Error(`--tls-cipher-suites: unsupported cipher suite ${JSON.stringify(name)}`);
  const [, auth, cipher, mode, hash] = m;
  if (cipher === 'CHACHA20_POLY1305') return `ECDHE-${auth}-CHACHA20-POLY1305`;
  const bits = cipher === 'AES_128' ? 'AES128' : 'AES256';
  if (mode === 'GCM') return `ECDHE-${auth}-${bits}-GCM-${hash ?? 'SHA256'}`;
  return `ECDHE-${auth}-${bits}-${hash ?? 'SHA'}`;
}

/**
 * The serving key and certificate: the given files, else `<certDirectory>/kubelet.crt|.key`,
 * made self-signed (for the host name, the node IPs and localhost) when missing.
 *
 * @internal
 */
export function servingTls(
  options: KubeletTlsOptions,
  subject: { readonly hostname: string; readonly ips: readonly string[]; readonly nowMs: number },
): ServingTls {
  let key: Buffer;
  let cert: Buffer;
  if (options.certFile || options.privateKeyFile) {
    if (!options.certFile || !options.privateKeyFile)
      throw new Error('--tls-cert-file and --tls-private-key-file go together');
    cert = readFile('--tls-cert-file', options.certFile);
    key = readFile('--tls-private-key-file', options.privateKeyFile);
  } else {
    const dir = options.certDirectory ?? '/var/lib/kubelet-kit/pki';
    const certPath = path.join(dir, 'kubelet.crt');
    const keyPath = path.join(dir, 'kubelet.key');
    if (!fs.existsSync(certPath) || !fs.existsSync(keyPath)) {
      const pair = selfSignedPair(subject.hostname, subject.ips, subject.nowMs);
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      fs.writeFileSync(keyPath, pair.key, { mode: 0o600 });
      fs.writeFileSync(certPath, pair.cert, { mode: 0o644 });
    }
    cert = readFile('certificate', certPath);
    key = readFile('key', keyPath);
  }
  let minVersion: SecureContextOptions['minVersion'] | undefined;
  if (options.minVersion) {
    minVersion = tlsVersions[options.minVersion];
    if (!minVersion)
      throw new Error(
        `--tls-min-version: unknown version ${JSON.stringify(options.minVersion)} (${Object.keys(tlsVersions).join(', ')})`,
      );
  }
  const ciphers = options.cipherSuites?.length
    ? options.cipherSuites.map(opensslCipher).join(':')
    : undefined;
  return {
    key,
    cert,
    ...(options.clientCAFile ? { ca: readFile('--client-ca-file', options.clientCAFile) } : {}),
    ...(minVersion ? { minVersion } : {}),
    ...(ciphers ? { ciphers } : {}),
  };
}

/**
 * A self-signed key and certificate made by the `openssl` binary (Node has no X.509 builder),
 * valid a year as upstream's `GenerateSelfSignedCertKey` certificate. The CN is
 * `<host>@<unix seconds>` as upstream names it.
 *
 * @internal
 */
export function selfSignedPair(
  hostname: string,
  ips: readonly string[],
  nowMs: number,
): { key: string; cert: string } {
  const san = [
    ...new Set([`DNS:${hostname}`, 'DNS:localhost', 'IP:127.0.0.1', ...ips.map((ip) => `IP:${ip}`)]),
  ];
  let pem: string;
  try {
    pem = execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        '-',
        '-out',
        '-',
        '-days',
        '365',
        '-subj',
        `/CN=${hostname}@${Math.floor(nowMs / 1000)}`,
        '-addext',
        `subjectAltName=${san.join(',')}`,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } catch (e) {
    throw new Error(
      `a self-signed serving certificate needs the openssl binary (or pass --tls-cert-file and --tls-private-key-file): ${(e as Error).message}`,
    );
  }
  const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n?/.exec(pem)?.[0];
  const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(pem)?.[0];
  if (!key || !cert) throw new Error('openssl printed no key and certificate');
  return { key, cert };
}
