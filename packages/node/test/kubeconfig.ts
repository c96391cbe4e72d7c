import fs from 'node:fs';

/** Writes a kubeconfig for a plain-HTTP API server on 127.0.0.1:`port`, with a bearer token. */
export function writeKubeconfig(file: string, port: number): string {
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      // client-node only speaks plain HTTP to a server marked insecure.
      `- name: local\n  cluster:\n    server: http://127.0.0.1:${port}\n    insecure-skip-tls-verify: true`,
      'users:',
      '- name: node\n  user:\n    token: t',
      'contexts:',
      '- name: local\n  context:\n    cluster: local\n    user: node',
      'current-context: local',
      '',
    ].join('\n'),
  );
  return file;
}
