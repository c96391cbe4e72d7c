// Runs `kubelet-kit run` (the built CLI) as a child process and reads its /pods, as the e2e
// tests' agent-process.ts does.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');
/** What the command loads: the CLI as the node package's build bundles it. */
export const cliPath = path.join(repoRoot, 'packages/node/dist/agent/cli.js');
/** The `kubelet-kit` command as npm links it: its first line (`env -S node <flags>`) gives Node's flags. */
const binPath = path.join(repoRoot, 'packages/node/bin/kubelet-kit.js');

/** The Node flags of the `kubelet-kit` command's `#!/usr/bin/env -S node …` line. */
export function commandNodeFlags() {
  const first = fs.readFileSync(binPath, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\S*env -S node(?<flags>.*)$/.exec(first);
  if (!m) throw new Error(`${binPath}: unexpected first line ${JSON.stringify(first)}`);
  return (m.groups?.flags ?? '').split(' ').filter(Boolean);
}

/** Warnings and errors (pino levels 40-60), and the line that gives the port. */
const mayMatter = (line) => /"level":[456]\d/.test(line) || line.includes('serving /healthz');

/**
 * Starts the agent on an (empty) manifest directory and resolves once its HTTP endpoints
 * answer. Its stdout (JSON logs) is drained; warnings, errors and the entries `keep` picks are
 * kept (of the lines `mayKeep` lets through).
 */
export async function startAgent({
  endpoint,
  manifestDir,
  rootDir,
  nodeName,
  args = [],
  keep = () => false,
  // Lines worth decoding: those `keep` may pick (a cheap text test, so that a benchmark does
  // not spend the machine's CPU decoding every log line of the agent it measures).
  mayKeep = () => true,
}) {
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  // For experiments: KUBELET_KIT_BENCH_AGENT_NODE_ARGS, Node/V8 flags for the agent (split at
  // spaces); KUBELET_KIT_BENCH_AGENT_PROFILE=<dir>, the agent runs with agent-profile.mjs preloaded.
  // The agent runs as the `kubelet-kit` command does: with the flags of its first line.
  const nodeArgs = [
    ...commandNodeFlags(),
    ...(process.env.KUBELET_KIT_BENCH_AGENT_NODE_ARGS ?? '').split(' ').filter(Boolean),
  ];
  if (process.env.KUBELET_KIT_BENCH_AGENT_PROFILE)
    nodeArgs.push('--import', path.join(import.meta.dirname, 'agent-profile.mjs'));
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      binPath,
      'run',
      '--pod-manifest-path',
      manifestDir,
      '--container-runtime-endpoint',
      endpoint,
      '--root-dir',
      rootDir,
      '--hostname-override',
      nodeName,
      '--port',
      '0',
      '--no-table',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const problems = [];
  const kept = [];
  let stderr = '';
  let buffered = '';
  child.stderr.on('data', (d) => {
    stderr += d.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`agent did not start in time; stderr: ${stderr}`)),
      30_000,
    );
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`agent exited with ${code}; stderr: ${stderr}`));
    });
    child.stdout.on('data', (d) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (!mayKeep(line) && !mayMatter(line)) continue;
        let entry;
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        // pino levels: 40 warn, 50 error.
        if (entry.level >= 40 && problems.length < 200) problems.push(entry);
        if (keep(entry)) kept.push(entry);
        if (entry.msg === 'serving /healthz, /pods, /metrics' && typeof entry.port === 'number') {
          clearTimeout(timer);
          resolve(entry.port);
        }
      }
    });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    child,
    pid: child.pid,
    baseUrl,
    problems,
    kept,
    async pods() {
      const res = await fetch(`${baseUrl}/pods`);
      return (await res.json()).items ?? [];
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
