// Runs `kubelet-kit run` as a child process for end-to-end tests, and reads its /pods.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pod } from '@kubelet-kit/core';
import { RuntimeServiceClient } from '@kubelet-kit/cri';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
// The command as `npx kubelet-kit` finds it: the bin npm linked for the workspace package.
export const cliPath = path.join(repoRoot, 'node_modules/.bin/kubelet-kit');
// What the command runs: the CLI as bundled by the node package's build.
const builtCli = path.join(repoRoot, 'packages/node/dist/agent/cli.js');
export const busybox = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';

/** The CRI endpoint of the private containerd; fails loudly when the harness is not up. */
export function criEndpoint(): string {
  const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
  if (!endpoint) {
    throw new Error(
      'KUBELET_KIT_CRI_ENDPOINT is not set. Start the private containerd first: ' +
        'source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
    );
  }
  assertBuilt();
  return endpoint;
}

function assertBuilt(): void {
  if (!fs.existsSync(builtCli)) throw new Error(`${builtCli} is missing: run \`npm run build\` first`);
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm install\` first`);
}

export interface AgentProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`, or `https://…` when the agent serves HTTPS (off loopback, auth). */
  readonly baseUrl: string;
  /**
   * A request to the agent's port (a path, or a URL under baseUrl); over HTTPS without verifying
   * the agent's self-signed certificate.
   */
  fetch(pathOrUrl: string, init?: { method?: string; headers?: Record<string, string> }): Promise<Response>;
  /** Every JSON log line the agent printed so far. */
  readonly logs: Array<Record<string, unknown>>;
  pods(): Promise<Pod[]>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL and wait: the agent gets no chance to clean up. */
  kill(): Promise<void>;
}

export interface StartAgentOptions {
  readonly nodeName: string;
  readonly manifestDir: string;
  readonly rootDir: string;
  readonly args?: readonly string[];
  /** The CRI endpoint; default {@link criEndpoint} (the shared containerd). */
  readonly endpoint?: string;
}

/** Starts the agent and resolves once its HTTP endpoints answer. */
export async function startAgent(options: StartAgentOptions): Promise<AgentProcess> {
  const endpoint = options.endpoint ?? criEndpoint();
  assertBuilt();
  const child = spawn(
    process.execPath,
    [
      cliPath,
      'run',
      '--pod-manifest-path',
      options.manifestDir,
      '--container-runtime-endpoint',
      endpoint,
      '--root-dir',
      options.rootDir,
      '--hostname-override',
      options.nodeName,
      '--port',
      '0',
      '--no-table',
      '--log-level',
      'debug',
      '--file-check-frequency',
      '2s',
      // The test images cannot be pulled again here: no image GC unless a test asks for it
      // (its own --image-gc-high-threshold comes later and wins).
      '--image-gc-high-threshold',
      '100',
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  let buffered = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  let scheme: 'http' | 'https' = 'http';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`agent did not start in time; stderr: ${stderr}`)),
      30_000,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`agent exited with ${code}; stderr: ${stderr}`));
    });
    child.stdout?.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'serving /healthz, /pods, /metrics' && typeof entry.port === 'number') {
            if (entry.scheme === 'https') scheme = 'https';
            clearTimeout(timer);
            resolve(entry.port);
          }
        } catch {
          // not a log line
        }
      }
    });
  });
  const baseUrl = `${scheme}://127.0.0.1:${port}`;
  const agentFetch = (pathOrUrl: string, init: { method?: string; headers?: Record<string, string> } = {}) =>
    scheme === 'http'
      ? fetch(pathOrUrl.startsWith('/') ? `${baseUrl}${pathOrUrl}` : pathOrUrl, init)
      : insecureHttpsFetch(pathOrUrl.startsWith('/') ? `${baseUrl}${pathOrUrl}` : pathOrUrl, init);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    baseUrl,
    logs,
    fetch: agentFetch,
    async pods() {
      const res = await agentFetch('/pods');
      return ((await res.json()) as { items: Pod[] }).items;
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Polls `check` (real time, bounded) until it returns a value other than undefined. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}

/** Removes every sandbox (and so its containers) whose pod name ends with `-<nodeName>`. */
export async function removeNodePods(nodeName: string, endpoint = criEndpoint()): Promise<void> {
  const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 60_000 });
  try {
    for (const s of (await runtime.listPodSandbox({})).items) {
      if (!s.metadata?.name?.endsWith(`-${nodeName}`)) continue;
      await runtime.stopPodSandbox({ podSandboxId: s.id }).catch(() => {});
      await runtime.removePodSandbox({ podSandboxId: s.id }).catch(() => {});
    }
  } finally {
    runtime.close();
  }
}

/** The sandboxes and containers of this node's pods, straight from the CRI. */
export async function runtimeState(nodeName: string, endpoint = criEndpoint()) {
  const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 60_000 });
  try {
    const sandboxes = (await runtime.listPodSandbox({})).items.filter((s) =>
      s.metadata?.name?.endsWith(`-${nodeName}`),
    );
    const ids = new Set(sandboxes.map((s) => s.id));
    const containers = (await runtime.listContainers({})).containers.filter((c) => ids.has(c.podSandboxId));
    return { sandboxes, containers };
  } finally {
    runtime.close();
  }
}

export function podNamed(pods: readonly Pod[], name: string): Pod | undefined {
  return pods.find((p) => p.metadata?.name === name);
}

export function isRunningWithIP(pod: Pod | undefined): boolean {
  return pod?.status?.phase === 'Running' && Boolean(pod.status.podIP);
}

/** A GET or POST over HTTPS that accepts any certificate (the agent's is self-signed). */
function insecureHttpsFetch(
  url: string,
  init: { method?: string; headers?: Record<string, string> },
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      { method: init.method ?? 'GET', headers: init.headers, rejectUnauthorized: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          const status = res.statusCode ?? 0;
          // A Response cannot carry a body with 1xx, 204 or 304.
          const body = [101, 204, 304].includes(status) ? null : Buffer.concat(chunks);
          resolve(new Response(body, { status, headers }));
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
