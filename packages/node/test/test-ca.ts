// A throwaway CA, a client certificate it signs and one it does not, made by openssl: what
// the x509 authentication tests present to the server.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCa {
  readonly dir: string;
  readonly caFile: string;
  readonly client: { readonly key: Buffer; readonly cert: Buffer };
  /** Self-signed, same subject: no chain to the CA. */
  readonly stranger: { readonly key: Buffer; readonly cert: Buffer };
}

const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function makeTestCa(clientSubject = '/O=system:nodes/O=ops/CN=alice'): TestCa {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-test-ca-'));
  const f = (n: string) => path.join(dir, n);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-days',
    '1',
    '-subj',
    '/CN=test-ca',
  );
  openssl('req', ...ec, '-keyout', f('client.key'), '-out', f('client.csr'), '-subj', clientSubject);
  openssl(
    'x509',
    '-req',
    '-in',
    f('client.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('client.crt'),
    '-days',
    '1',
  );
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('stranger.key'),
    '-out',
    f('stranger.crt'),
    '-days',
    '1',
    '-subj',
    clientSubject,
  );
  return {
    dir,
    caFile: f('ca.crt'),
    client: { key: fs.readFileSync(f('client.key')), cert: fs.readFileSync(f('client.crt')) },
    stranger: { key: fs.readFileSync(f('stranger.key')), cert: fs.readFileSync(f('stranger.crt')) },
  };
}
