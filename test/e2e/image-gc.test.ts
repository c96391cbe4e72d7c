// End to end: image garbage collection of `kubelet-kit run` on the private containerd.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/image-gc.test.ts
// Extra tiny images are imported; thresholds 1%/0% force collection on any disk. The hidden
// --image-gc-period flag (not upstream's: upstream collects every 5 min) shortens the wait.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImageServiceClient } from '@kubelet-kit/cri';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  criEndpoint,
  isRunningWithIP,
  podNamed,
  removeNodePods,
  startAgent,
  waitFor,
} from './support/agent-process.js';
import { tinyImageArchive } from './support/oci-image.js';

const nodeName = `e2e-${randomBytes(3).toString('hex')}`;
const suffix = randomBytes(3).toString('hex');
const extra = [`localhost/kubelet-kit/gc-a-${suffix}:1`, `localhost/kubelet-kit/gc-b-${suffix}:1`];
const pause = process.env.KUBELET_KIT_PAUSE_IMAGE ?? 'localhost/kubelet-kit/pause:1.0';

function ctr(...args: string[]): string {
  const sock = process.env.KUBELET_KIT_CONTAINERD_SOCK;
  if (!sock) throw new Error('KUBELET_KIT_CONTAINERD_SOCK is not set: source scripts/containerd/env.sh');
  return execFileSync('ctr', ['--address', sock, '-n', 'k8s.io', ...args], { encoding: 'utf8' });
}

describe('image GC of kubelet-kit run on containerd', () => {
  let dir: string;
  let agent: AgentProcess | undefined;
  let images: ImageServiceClient;
  const tags = async () => (await images.listImages({})).images.flatMap((i) => i.repoTags);

  beforeAll(async () => {
    images = new ImageServiceClient({ endpoint: criEndpoint(), timeoutMs: 60_000 });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-imagegc-e2e-'));
    fs.mkdirSync(path.join(dir, 'manifests'));
    for (const [i, name] of extra.entries()) {
      const file = path.join(dir, `extra-${i}.tar`);
      fs.writeFileSync(file, tinyImageArchive(name, `image ${name}\n`));
      ctr('images', 'import', file);
    }
    fs.writeFileSync(
      path.join(dir, 'manifests', 'user.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'user' },
        spec: {
          terminationGracePeriodSeconds: 2,
          containers: [
            { name: 'main', image: busybox, command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'] },
          ],
        },
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName).catch(() => {});
    // Whatever the test did not remove goes, so reruns start clean.
    for (const name of extra) await images.removeImage({ image: { image: name } }).catch(() => {});
    images?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('removes unused images; keeps the image of a running pod and the sandbox image', async () => {
    expect(await tags()).toEqual(expect.arrayContaining([...extra, busybox, pause]));
    agent = await startAgent({
      nodeName,
      manifestDir: path.join(dir, 'manifests'),
      rootDir: path.join(dir, 'root'),
      args: [
        '--image-gc-high-threshold',
        '1',
        '--image-gc-low-threshold',
        '0',
        // Images seen at the first collection (at start, maybe before the pod's container) stay.
        '--image-minimum-gc-age',
        '1s',
        '--image-gc-period',
        '3s',
      ],
    });
    await waitFor(
      'the pod running',
      async () => (isRunningWithIP(podNamed(await agent!.pods(), `user-${nodeName}`)) ? true : undefined),
      60_000,
    );
    await waitFor(
      'the unused images removed',
      async () => {
        const now = await tags();
        return extra.every((t) => !now.includes(t)) ? now : undefined;
      },
      60_000,
    );
    const left = await tags();
    expect(left).toContain(busybox);
    expect(left).toContain(pause);
    // The pod still runs.
    expect(isRunningWithIP(podNamed(await agent.pods(), `user-${nodeName}`))).toBe(true);
  }, 180_000);
});
