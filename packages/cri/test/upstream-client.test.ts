import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { CriError, ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterEach, describe, expect, test } from 'vitest';
import { messageCodec } from '../src/codec.js';

// The client-side behaviour of upstream's cri-client (`remote_runtime.go`, `remote_image.go`,
// `utils.go`): per-RPC deadlines and the checks it makes on OK responses.

interface Scripted {
  /** The response type, encoded from `reply`. */
  type: string;
  reply: Record<string, unknown>;
  service?: 'RuntimeService' | 'ImageService';
}

interface Seen {
  /** Milliseconds left before the call's deadline when the server got it (Infinity: none). */
  remainingMs: number;
  request: Buffer;
}

const open: Array<() => void> = [];
afterEach(() => {
  for (const close of open.splice(0)) close();
});

/** A bare gRPC server answering each scripted RPC with its reply, recording what it got. */
async function scriptedServer(methods: Record<string, Scripted>) {
  const server = new Server();
  const id = (b: Buffer) => b;
  const seen: Record<string, Seen[]> = {};
  for (const service of ['RuntimeService', 'ImageService'] as const) {
    const definition: Record<string, unknown> = {};
    const handlers: Record<string, unknown> = {};
    for (const [method, s] of Object.entries(methods)) {
      if ((s.service ?? 'RuntimeService') !== service) continue;
      const reply = messageCodec(s.type).encode(s.reply);
      definition[method] = {
        path: `/runtime.v1.${service}/${method}`,
        requestStream: false,
        responseStream: false,
        requestSerialize: id,
        requestDeserialize: id,
        responseSerialize: id,
        responseDeserialize: id,
      };
      handlers[method] = (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
        const deadline = call.getDeadline();
        const at = deadline instanceof Date ? deadline.getTime() : deadline;
        const calls = seen[method] ?? [];
        seen[method] = calls;
        calls.push({ remainingMs: at - Date.now(), request: call.request });
        callback(null, reply);
      };
    }
    // biome-ignore lint/suspicious/noExplicitAny: a hand-built definition of raw byte methods
    if (Object.keys(definition).length > 0) server.addService(definition as any, handlers as any);
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const endpoint = `tcp://127.0.0.1:${port}`;
  const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 10_000 });
  const image = new ImageServiceClient({ endpoint, timeoutMs: 10_000 });
  open.push(() => {
    runtime.close();
    image.close();
    server.forceShutdown();
  });
  return { runtime, image, seen };
}

const okSandboxStatus = {
  id: 'sb1',
  metadata: { name: 'p', namespace: 'ns', uid: 'u', attempt: 0 },
  createdAt: 1,
};
const okContainerStatus = {
  id: 'c1',
  metadata: { name: 'c', attempt: 0 },
  createdAt: 1,
  image: { image: 'busybox' },
  imageRef: 'sha256:abc',
};

describe('deadlines (remote_runtime.go)', () => {
  test('RunPodSandbox gets twice the default deadline', async () => {
    const { runtime, seen } = await scriptedServer({
      RunPodSandbox: { type: 'RunPodSandboxResponse', reply: { podSandboxId: 'sb1' } },
    });
    await runtime.runPodSandbox({ config: { metadata: { name: 'p' } } });
    const remaining = seen.RunPodSandbox?.[0]?.remainingMs ?? 0;
    expect(remaining).toBeGreaterThan(15_000);
    expect(remaining).toBeLessThanOrEqual(20_000);
  });

  test('ExecSync without a command timeout has no deadline; with one, default + timeout', async () => {
    const { runtime, seen } = await scriptedServer({
      ExecSync: { type: 'ExecSyncResponse', reply: { exitCode: 0 } },
    });
    await runtime.execSync({ containerId: 'c1', cmd: ['true'] });
    await runtime.execSync({ containerId: 'c1', cmd: ['true'], timeout: 0 });
    await runtime.execSync({ containerId: 'c1', cmd: ['true'], timeout: 5 });
    const [absent, zero, five] = (seen.ExecSync ?? []).map((s) => s.remainingMs);
    expect(absent).toBe(Number.POSITIVE_INFINITY);
    expect(zero).toBe(Number.POSITIVE_INFINITY);
    expect(five).toBeGreaterThan(10_000);
    expect(five).toBeLessThanOrEqual(15_000);
  });

  test('StopContainer gets the default plus its grace period', async () => {
    const { runtime, seen } = await scriptedServer({
      StopContainer: { type: 'StopContainerResponse', reply: {} },
    });
    await runtime.stopContainer({ containerId: 'c1', timeout: 30 });
    const remaining = seen.StopContainer?.[0]?.remainingMs ?? 0;
    expect(remaining).toBeGreaterThan(35_000);
    expect(remaining).toBeLessThanOrEqual(40_000);
  });

  test('CheckpointContainer: a longer timeout is the deadline, a shorter one is raised to the default', async () => {
    const { runtime, seen } = await scriptedServer({
      CheckpointContainer: { type: 'CheckpointContainerResponse', reply: {} },
    });
    const request = messageCodec<{ timeout: number }>('CheckpointContainerRequest');
    await runtime.checkpointContainer({ containerId: 'c1', timeout: 60 });
    await runtime.checkpointContainer({ containerId: 'c1', timeout: 3 });
    const [long, short] = seen.CheckpointContainer ?? [];
    expect(long?.remainingMs).toBeGreaterThan(55_000);
    expect(long?.remainingMs).toBeLessThanOrEqual(60_000);
    expect(request.decode(long?.request ?? Buffer.alloc(0)).timeout).toBe(60);
    expect(short?.remainingMs).toBeGreaterThan(5_000);
    expect(short?.remainingMs).toBeLessThanOrEqual(10_000);
    expect(request.decode(short?.request ?? Buffer.alloc(0)).timeout).toBe(10);
    await expect(runtime.checkpointContainer({ containerId: 'c1', timeout: -1 })).rejects.toMatchObject({
      code: 'InvalidArgument',
    });
    expect(seen.CheckpointContainer).toHaveLength(2);
  });
});

describe('response checks (remote_runtime.go, remote_image.go, utils.go)', () => {
  async function failure(call: Promise<unknown>): Promise<CriError> {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CriError);
    expect(err).toMatchObject({ code: 'Unknown' });
    return err as CriError;
  }

  test('Version must carry all four fields; the missing ones are named', async () => {
    const { runtime } = await scriptedServer({
      Version: { type: 'VersionResponse', reply: { version: '0.1.0', runtimeName: 'containerd' } },
    });
    const err = await failure(runtime.version());
    expect(err.details).toContain('RuntimeApiVersion, RuntimeVersion');
    expect(err.method).toBe('Version');
  });

  test('RunPodSandbox and CreateContainer must return an id', async () => {
    const { runtime } = await scriptedServer({
      RunPodSandbox: { type: 'RunPodSandboxResponse', reply: {} },
      CreateContainer: { type: 'CreateContainerResponse', reply: {} },
    });
    expect((await failure(runtime.runPodSandbox({ config: { metadata: { name: 'p' } } }))).details).toContain(
      '"name":"p"',
    );
    expect(
      (await failure(runtime.createContainer({ config: { metadata: { name: 'c' } } }))).details,
    ).toContain('"name":"c"');
  });

  test.each([
    ['no id', { ...okSandboxStatus, id: '' }],
    ['no metadata', { ...okSandboxStatus, metadata: undefined }],
    ['no namespace', { ...okSandboxStatus, metadata: { name: 'p', uid: 'u' } }],
    ['no uid', { ...okSandboxStatus, metadata: { name: 'p', namespace: 'ns' } }],
    ['no createdAt', { ...okSandboxStatus, createdAt: 0 }],
  ])('PodSandboxStatus with %s fails', async (_, status) => {
    const { runtime } = await scriptedServer({
      PodSandboxStatus: { type: 'PodSandboxStatusResponse', reply: { status } },
    });
    await failure(runtime.podSandboxStatus({ podSandboxId: 'sb1' }));
  });

  test.each([
    ['no id', { ...okContainerStatus, id: '' }],
    ['no metadata', { ...okContainerStatus, metadata: undefined }],
    ['no name', { ...okContainerStatus, metadata: { attempt: 1 } }],
    ['no createdAt', { ...okContainerStatus, createdAt: 0 }],
    ['no image', { ...okContainerStatus, image: undefined }],
    ['an empty image', { ...okContainerStatus, image: { image: '' } }],
    ['no imageRef', { ...okContainerStatus, imageRef: '' }],
  ])('ContainerStatus with %s fails', async (_, status) => {
    const { runtime } = await scriptedServer({
      ContainerStatus: { type: 'ContainerStatusResponse', reply: { status } },
    });
    await failure(runtime.containerStatus({ containerId: 'c1' }));
  });

  test('complete statuses pass, and so does an absent one (upstream checks only a status that is there)', async () => {
    const { runtime } = await scriptedServer({
      PodSandboxStatus: { type: 'PodSandboxStatusResponse', reply: { status: okSandboxStatus } },
      ContainerStatus: { type: 'ContainerStatusResponse', reply: {} },
    });
    await expect(runtime.podSandboxStatus({ podSandboxId: 'sb1' })).resolves.toMatchObject({
      status: { id: 'sb1' },
    });
    await expect(runtime.containerStatus({ containerId: 'c1' })).resolves.toMatchObject({});
  });

  test('Status needs both runtime conditions', async () => {
    const { runtime } = await scriptedServer({
      Status: {
        type: 'StatusResponse',
        reply: { status: { conditions: [{ type: 'RuntimeReady', status: true }] } },
      },
    });
    await failure(runtime.status());
  });

  test('Exec, Attach and PortForward must return a URL', async () => {
    const { runtime } = await scriptedServer({
      Exec: { type: 'ExecResponse', reply: {} },
      Attach: { type: 'AttachResponse', reply: {} },
      PortForward: { type: 'PortForwardResponse', reply: {} },
    });
    await failure(runtime.exec({ containerId: 'c1', cmd: ['sh'] }));
    await failure(runtime.attach({ containerId: 'c1' }));
    await failure(runtime.portForward({ podSandboxId: 'sb1' }));
  });

  test('ImageStatus of a reported image needs its id and size; PullImage needs an imageRef', async () => {
    const { image } = await scriptedServer({
      ImageStatus: {
        type: 'ImageStatusResponse',
        reply: { image: { id: 'sha256:abc', size: 0 } },
        service: 'ImageService',
      },
      PullImage: { type: 'PullImageResponse', reply: {}, service: 'ImageService' },
    });
    expect((await failure(image.imageStatus({ image: { image: 'busybox' } }))).details).toContain(
      '"busybox"',
    );
    expect((await failure(image.pullImage({ image: { image: 'busybox' } }))).details).toContain('"busybox"');
  });
});
