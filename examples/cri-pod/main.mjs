#!/usr/bin/env node
// Runs a busybox pod on the private containerd through @kubelet-kit/cri alone, prints its
// status, then removes it. Run after `npm run build` with the containerd up:
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && node examples/cri-pod/main.mjs
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ContainerState, ImageServiceClient, PodSandboxState, RuntimeServiceClient } from '@kubelet-kit/cri';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error(
    'KUBELET_KIT_CRI_ENDPOINT is not set: source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
  );
  process.exit(2);
}
const image = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';
const nameOf = (values, value) => Object.keys(values).find((k) => values[k] === value) ?? String(value);
const time = (ns) => (ns ? new Date(ns / 1e6).toISOString() : '-');

const runtime = new RuntimeServiceClient({ endpoint });
const images = new ImageServiceClient({ endpoint });
const uid = randomBytes(8).toString('hex');
const labels = { 'kubelet-kit.io/example': 'cri-pod', 'kubelet-kit.io/uid': uid };
const logDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'cri-pod-logs-'));
let podSandboxId;

async function main() {
  const version = await runtime.version({ version: 'v1' });
  console.log(
    `runtime   ${version.runtimeName} ${version.runtimeVersion} (CRI ${version.runtimeApiVersion})`,
  );
  if (!(await images.imageStatus({ image: { image } })).image) {
    throw new Error(`image ${image} is not present; run scripts/containerd/up.sh`);
  }

  const sandboxConfig = {
    metadata: { name: 'cri-pod', namespace: 'default', uid, attempt: 0 },
    hostname: 'cri-pod',
    logDirectory,
    labels,
  };
  ({ podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig }));
  const { containerId } = await runtime.createContainer({
    podSandboxId,
    config: {
      metadata: { name: 'busybox', attempt: 0 },
      image: { image },
      command: ['sh', '-c', 'echo "hello from $(hostname)"; sleep 3600'],
      envs: [{ key: 'GREETING', value: 'grüße ✓' }],
      logPath: 'busybox/0.log',
      labels,
    },
    sandboxConfig,
  });
  await runtime.startContainer({ containerId });
  const exec = await runtime.execSync({
    containerId,
    cmd: ['sh', '-c', 'echo "$GREETING from $(id -un)"'],
    timeout: 10,
  });
  await new Promise((resolve) => setTimeout(resolve, 300)); // let the first log line land

  const sandbox = (await runtime.podSandboxStatus({ podSandboxId })).status;
  const container = (await runtime.containerStatus({ containerId })).status;
  console.log(
    `pod       ${sandbox.metadata.namespace}/${sandbox.metadata.name} ${podSandboxId.slice(0, 12)}`,
  );
  console.log(`  state   ${nameOf(PodSandboxState, sandbox.state)}`);
  console.log(`  ip      ${sandbox.network?.ip}`);
  console.log(`container ${container.metadata.name} ${containerId.slice(0, 12)}`);
  console.log(`  state   ${nameOf(ContainerState, container.state)} since ${time(container.startedAt)}`);
  console.log(`  image   ${container.image?.image} (${container.imageRef.slice(0, 19)})`);
  console.log(`  exec    ${Buffer.from(exec.stdout).toString().trim()} (exit ${exec.exitCode})`);
  console.log(`  log     ${fs.readFileSync(container.logPath, 'utf8').trim()}`);
}

async function cleanup() {
  if (podSandboxId) {
    // RemovePodSandbox stops and removes the pod's containers too.
    await runtime.stopPodSandbox({ podSandboxId });
    await runtime.removePodSandbox({ podSandboxId });
    const left = await runtime.listContainers({ filter: { labelSelector: labels } });
    console.log(`cleanup   pod removed; ${left.containers.length} containers left`);
  }
  runtime.close();
  images.close();
  fs.rmSync(logDirectory, { recursive: true, force: true });
}

try {
  await main();
} catch (err) {
  console.error(`cri-pod: ${err instanceof Error ? err.message : err}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
