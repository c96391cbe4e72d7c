// The agent assembled in code: the example static pods on the private containerd, with the
// pods' status printed whenever it changes. Run (as root, from the repository root):
//   npm run build && source scripts/containerd/env.sh && bash scripts/containerd/up.sh
//   node examples/standalone-agent/main.mjs
// Ctrl-C stops the agent; the pods keep running until `bash scripts/containerd/down.sh`.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgent, formatPodTable } from '@kubelet-kit/node';

const here = path.dirname(fileURLToPath(import.meta.url));
const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error(
    'KUBELET_KIT_CRI_ENDPOINT is not set: source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
  );
  process.exit(2);
}

const agent = createAgent({
  runtimeEndpoint: endpoint,
  podManifestPath: path.join(here, '../static-pods'),
  rootDirectory: path.join(process.env.KUBELET_KIT_TEST_ROOT ?? '/tmp', 'standalone-agent'),
  nodeName: 'example-node',
  port: 0,
});
await agent.start();
console.log(`serving /pods on http://${agent.address?.address}:${agent.address?.port}`);

let last = '';
const timer = setInterval(() => {
  const table = formatPodTable(agent.kubelet.podsWithStatus(), Date.now());
  if (table === last) return;
  last = table;
  console.log(`\n${table}`);
}, 1000);

process.on('SIGINT', async () => {
  clearInterval(timer);
  await agent.stop();
  process.exit(0);
});
