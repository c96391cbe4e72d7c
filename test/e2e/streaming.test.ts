// End to end: kubectl exec and port-forward through the in-memory API server to the agent's
// streaming proxy and containerd's streaming server. `kubelet-kit run --kubeconfig` on the
// private containerd; the API server forwards pods/exec and pods/portforward to the Node's
// InternalIP (the agent listens on all addresses) and kubelet port; the agent asks CRI Exec/PortForward for
// the runtime's URL and proxies the upgraded connection there. Also the direct /run endpoint.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/streaming.test.ts
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FakeApiServer, type KubeObject } from '@kubelet-kit/apiserver/testing';
import type { Pod } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, busybox, removeNodePods, startAgent, waitFor } from './support/agent-process.js';
import { findKubectl } from './support/kubectl.js';

const run = promisify(execFile);
const nodeName = `e2e-stream-${randomBytes(3).toString('hex')}`;
const podName = `web-${nodeName}`;

/** Runs a command with `input` on stdin; resolves with its exit code and output. */
function spawnWith(
  cmd: string,
  args: string[],
  input: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

describe('kubectl exec and port-forward through the agent', () => {
  let dir: string;
  let kubeconfig: string;
  let kubectlPath: string;
  let api: FakeApiServer;
  let agent: AgentProcess | undefined;

  const kubectl = (args: string[], input?: string, env?: NodeJS.ProcessEnv) =>
    spawnWith(kubectlPath, ['--kubeconfig', kubeconfig, ...args], input, { ...process.env, ...env });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-stream-e2e-'));
    kubectlPath = findKubectl();
    api = new FakeApiServer({ kubeletScheme: 'https' });
    await api.start();
    kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      args: ['--kubeconfig', kubeconfig, '--address', '0.0.0.0'],
    });
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: podName, namespace: 'default' },
      spec: {
        nodeName,
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'main',
            image: busybox,
            imagePullPolicy: 'IfNotPresent',
            command: [
              'sh',
              '-c',
              'mkdir -p /tmp/www && echo hello-through-port-forward > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www',
            ],
          },
        ],
      },
    };
    const file = path.join(dir, 'pod.json');
    fs.writeFileSync(file, JSON.stringify(manifest));
    await run(kubectlPath, ['--kubeconfig', kubeconfig, 'apply', '-f', file]);
    // The API server finds the kubelet at the Node's InternalIP and daemonEndpoints port.
    await waitFor(
      'the Node with its InternalIP',
      async () =>
        api
          .get<KubeObject & { status?: { addresses?: Array<{ type: string }> } }>('Node', undefined, nodeName)
          ?.status?.addresses?.some((a) => a.type === 'InternalIP')
          ? true
          : undefined,
      60_000,
    );
    await waitFor(
      'the pod Running',
      async () =>
        api.get<Pod & KubeObject>('Pod', 'default', podName)?.status?.phase === 'Running' ? true : undefined,
      90_000,
    );
  }, 150_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.stop();
    await removeNodePods(nodeName);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('`kubectl exec -- echo hi` prints hi (WebSocket v5, the default)', async () => {
    const r = await kubectl(['exec', podName, '--', 'echo', 'hi']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hi\n');
    expect(r.code).toBe(0);
  }, 60_000);

  it('`kubectl exec` over SPDY (websockets off) prints hi', async () => {
    const r = await kubectl(['exec', podName, '--', 'echo', 'hi'], undefined, {
      KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false',
    });
    expect(r.stdout).toBe('hi\n');
    expect(r.code).toBe(0);
  }, 60_000);

  it('`kubectl exec -i` passes stdin', async () => {
    const r = await kubectl(['exec', '-i', podName, '--', 'cat'], 'data from stdin\n');
    expect(r.stdout).toBe('data from stdin\n');
    expect(r.code).toBe(0);
  }, 60_000);

  it('passes a non-zero exit code back', async () => {
    const r = await kubectl(['exec', podName, '--', 'sh', '-c', 'echo oops >&2; exit 3']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('oops');
  }, 60_000);

  it('`kubectl port-forward :8080` reaches the httpd in the pod', async () => {
    const child = spawn(kubectlPath, ['--kubeconfig', kubeconfig, 'port-forward', podName, ':8080'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      const local = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no Forwarding line: ${out}`)), 30_000);
        const onData = (d: Buffer) => {
          out += d.toString();
          const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        child.on('close', () => reject(new Error(`port-forward exited: ${out}`)));
      });
      const res = await fetch(`http://127.0.0.1:${local}/index.html`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('hello-through-port-forward\n');
    } finally {
      child.kill('SIGTERM');
    }
  }, 60_000);

  it('`kubectl debug -i --target=main` attaches to an ephemeral container sharing its PIDs', async () => {
    const child = spawn(
      kubectlPath,
      [
        '--kubeconfig',
        kubeconfig,
        'debug',
        '-i',
        podName,
        `--image=${busybox}`,
        '--image-pull-policy=IfNotPresent',
        '--target=main',
        '--container=debugger',
        '--',
        'sh',
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      // Attached once kubectl says so; stdin stays open while the shell answers (containerd
      // ends an attach when the client's stdin closes).
      await waitFor('the attach', async () =>
        out.includes("If you don't see a command prompt") ? true : undefined,
      );
      // httpd runs in the target container: the debugger sees it only through the shared PIDs.
      child.stdin.write('echo marker-$((40+2)); ps -o comm | grep -c httpd\n');
      await waitFor('the marker', async () => (/marker-42\n1\n/.test(out) ? true : undefined), 30_000);
      child.stdin.end('exit 0\n');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGTERM');
    }
    const pod = api.get<Pod & KubeObject>('Pod', 'default', podName);
    expect(pod?.status?.ephemeralContainerStatuses?.map((s) => s.name)).toEqual(['debugger']);
  }, 90_000);

  it('/run answers ExecSync output directly', async () => {
    const url = `${agent!.baseUrl}/run/default/${podName}/main`;
    const res = await agent!.fetch(`${url}?cmd=${encodeURIComponent('echo run-ok')}`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('run-ok\n');
    const missing = await agent!.fetch(`${agent!.baseUrl}/run/default/nope/main?cmd=ls`, { method: 'POST' });
    expect(missing.status).toBe(404);
  }, 30_000);
});
