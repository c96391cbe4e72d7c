import { type CriClientOptions, ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer, type InMemoryCriServerOptions } from '@kubelet-kit/cri/testing';
import { afterEach } from 'vitest';

export interface Harness {
  server: InMemoryCriServer;
  runtime: RuntimeServiceClient;
  image: ImageServiceClient;
}

const open: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

export const BUSYBOX = 'localhost/kubelet-kit/busybox:1.0';

/** Starts an in-memory server plus both clients; everything closes after the test. */
export async function harness(
  serverOptions: InMemoryCriServerOptions = {},
  clientOptions: Omit<CriClientOptions, 'endpoint'> = {},
): Promise<Harness> {
  const server = await InMemoryCriServer.start({ images: [BUSYBOX], ...serverOptions });
  const runtime = new RuntimeServiceClient({ endpoint: server.endpoint, ...clientOptions });
  const image = new ImageServiceClient({ endpoint: server.endpoint, ...clientOptions });
  open.push(async () => {
    runtime.close();
    image.close();
    await server.close();
  });
  return { server, runtime, image };
}

export function sandboxConfig(name: string, extra: Record<string, unknown> = {}) {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, attempt: 0 },
    labels: { app: name, 'kubelet-kit/test': 'cri' },
    ...extra,
  };
}

export function containerConfig(name: string, extra: Record<string, unknown> = {}) {
  return {
    metadata: { name, attempt: 0 },
    image: { image: BUSYBOX },
    command: ['sh', '-c', 'sleep 3600'],
    labels: { container: name },
    ...extra,
  };
}
