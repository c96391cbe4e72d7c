// The kubectl the e2e tests drive: the one scripts/kubectl.sh finds (or installs from Debian).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The path of a usable kubectl. */
export function findKubectl(): string {
  return execFileSync('bash', [path.join(repoRoot, 'scripts/kubectl.sh')], { encoding: 'utf8' }).trim();
}
