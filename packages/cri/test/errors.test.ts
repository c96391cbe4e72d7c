import { Server, ServerCredentials } from '@grpc/grpc-js';
import { CriError, type CriErrorCode, ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { describe, expect, test } from 'vitest';
import { grpcStatusOf } from '../src/errors.js';
import { harness } from './helpers.js';

// gRPC status numbers from the gRPC spec, written out so a wrong mapping cannot pass.
const codes: Array<[CriErrorCode, number]> = [
  ['Cancelled', 1],
  ['Unknown', 2],
  ['InvalidArgument', 3],
  ['DeadlineExceeded', 4],
  ['NotFound', 5],
  ['AlreadyExists', 6],
  ['PermissionDenied', 7],
  ['ResourceExhausted', 8],
  ['FailedPrecondition', 9],
  ['Aborted', 10],
  ['OutOfRange', 11],
  ['Unimplemented', 12],
  ['Internal', 13],
  ['Unavailable', 14],
  ['DataLoss', 15],
  ['Unauthenticated', 16],
];

describe('error mapping', () => {
  test.each(codes)(
    'status %s (%i) from the runtime becomes a CriError keeping its message',
    async (code, number) => {
      const { server, runtime } = await harness();
      server.failNext('Version', 1, number, `runtime says ${code}`);
      const err = await runtime.version().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CriError);
      expect(err).toMatchObject({
        code,
        grpcStatus: number,
        details: `runtime says ${code}`,
        method: 'Version',
        message: `Version: rpc error: code = ${code} desc = runtime says ${code}`,
      });
      expect(CriError.is(err, code)).toBe(true);
      expect(grpcStatusOf(code)).toBe(number);
      // The fault is used up: the next call succeeds.
      await expect(runtime.version()).resolves.toMatchObject({ runtimeApiVersion: 'v1' });
    },
  );

  test('failNext fails exactly the next N calls of that method only', async () => {
    const { server, runtime, image } = await harness();
    server.failNext('ListContainers', 2, 'Unavailable', 'connection reset');
    server.failNext('ListContainers', 1, 'Internal', 'then this');
    await expect(runtime.listPodSandbox()).resolves.toEqual({ items: [] });
    await expect(image.listImages()).resolves.toBeDefined();
    for (const expected of ['Unavailable', 'Unavailable', 'Internal'] as const) {
      await expect(runtime.listContainers()).rejects.toMatchObject({ code: expected });
    }
    await expect(runtime.listContainers()).resolves.toEqual({ containers: [] });
    expect(server.calls('ListContainers')).toHaveLength(4);
    server.failNext('ListContainers', 1, 'Aborted');
    server.clearFaults();
    await expect(runtime.listContainers()).resolves.toEqual({ containers: [] });
  });

  test('a client-side deadline fires (DeadlineExceeded)', async () => {
    const { server, runtime } = await harness();
    server.setLatency('Version', 300);
    await expect(runtime.version({}, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'DeadlineExceeded' });
    // Other methods are not delayed; the default deadline is long enough.
    await expect(runtime.status()).resolves.toBeDefined();
  });

  test('the client default deadline applies when the call sets none', async () => {
    const { server, runtime } = await harness({}, { timeoutMs: 100 });
    server.setLatency('*', 300);
    await expect(runtime.listPodSandbox()).rejects.toMatchObject({ code: 'DeadlineExceeded' });
    await expect(runtime.listPodSandbox({}, { timeoutMs: 2000 })).resolves.toEqual({ items: [] });
  });

  test('AbortSignal cancels a call in flight (Cancelled)', async () => {
    const { server, runtime } = await harness();
    server.setLatency('Status', 300);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutting down')), 50);
    const err = await runtime.status({}, { signal: controller.signal }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'Cancelled', grpcStatus: 1, details: 'call cancelled: shutting down' });
    expect((err as CriError).cause).toBe(controller.signal.reason);
  });

  test('an already aborted signal rejects without calling the runtime', async () => {
    const { server, runtime } = await harness();
    await expect(runtime.version({}, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'Cancelled',
    });
    expect(server.calls('Version')).toHaveLength(0);
  });

  test('a runtime that is not there is Unavailable', async () => {
    const server = await InMemoryCriServer.start();
    const endpoint = server.endpoint;
    await server.close();
    const runtime = new RuntimeServiceClient({ endpoint });
    try {
      await expect(runtime.version()).rejects.toMatchObject({ code: 'Unavailable' });
    } finally {
      runtime.close();
    }
  });

  test('unimplemented RPCs answer Unimplemented', async () => {
    const { runtime } = await harness();
    await expect(runtime.runtimeConfig()).rejects.toMatchObject({
      code: 'Unimplemented',
      details: 'unknown method RuntimeConfig for service runtime.v1.RuntimeService',
    });
  });

  test('a request that cannot be encoded is rejected as InvalidArgument before sending', async () => {
    const { server, runtime } = await harness();
    // Deliberately wrong shape (a string where a message goes), as an untyped caller might send.
    const bad = { config: 'not a message' } as unknown as Parameters<
      RuntimeServiceClient['runPodSandbox']
    >[0];
    await expect(runtime.runPodSandbox(bad)).rejects.toMatchObject({ code: 'InvalidArgument' });
    expect(server.calls('RunPodSandbox')).toHaveLength(0);
  });
});

describe('endpoints', () => {
  test('tcp://host:port reaches a loopback server', async () => {
    const { server, runtime, image } = await harness({ listen: 'tcp' });
    expect(server.endpoint).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
    await expect(runtime.version()).resolves.toMatchObject({ runtimeApiVersion: 'v1' });
    await expect(image.listImages()).resolves.toBeDefined();
  });

  test('unix:path (relative form) and a bare absolute path reach a unix-socket server', async () => {
    const server = await InMemoryCriServer.start();
    const socket = server.endpoint.slice('unix://'.length);
    const clients = [
      new RuntimeServiceClient({ endpoint: `unix:${socket}` }),
      new RuntimeServiceClient({ endpoint: socket }),
    ];
    try {
      for (const client of clients) await expect(client.version()).resolves.toBeDefined();
    } finally {
      for (const client of clients) client.close();
      await server.close();
    }
  });

  test.each(['http://x:1', 'tcp://nohost', 'unix:', 'unix://relative', 'localhost:1234', ''])(
    'invalid endpoint %j throws InvalidArgument',
    (endpoint) => {
      expect(() => new ImageServiceClient({ endpoint })).toThrow(
        expect.objectContaining({ code: 'InvalidArgument' }),
      );
    },
  );
});

describe('malformed replies', () => {
  /** A bare gRPC server whose `method` handler answers with the given bytes as they are. */
  async function rawServer(
    reply: Buffer,
    method = 'Version',
  ): Promise<{ endpoint: string; close: () => void }> {
    const server = new Server();
    const id = (b: Buffer) => b;
    server.addService(
      {
        [method]: {
          path: `/runtime.v1.RuntimeService/${method}`,
          requestStream: false,
          responseStream: false,
          requestSerialize: id,
          requestDeserialize: id,
          responseSerialize: id,
          responseDeserialize: id,
        },
      },
      { [method]: (_call: unknown, callback: (err: null, value: Buffer) => void) => callback(null, reply) },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    return { endpoint: `tcp://127.0.0.1:${port}`, close: () => server.forceShutdown() };
  }

  test('a reply that is not a valid message fails the call with Internal, naming the parse error', async () => {
    // Field 1 as a varint, cut off after its first byte.
    const server = await rawServer(Buffer.from([0x08, 0xff]));
    const runtime = new RuntimeServiceClient({ endpoint: server.endpoint });
    try {
      const err = await runtime.version().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CriError);
      expect(err).toMatchObject({ code: 'Internal', method: 'Version' });
      expect((err as CriError).details).toMatch(/^Response message parsing error: /);
    } finally {
      runtime.close();
      server.close();
    }
  });

  test('an empty reply decodes to the message with every field unset', async () => {
    // ExecSync: the client checks nothing in its reply (Version's would fail the call).
    const server = await rawServer(Buffer.alloc(0), 'ExecSync');
    const runtime = new RuntimeServiceClient({ endpoint: server.endpoint });
    try {
      const res = await runtime.execSync({ containerId: 'c', cmd: ['true'] });
      expect(res.exitCode).toBe(0);
      expect(res.stdout).toHaveLength(0);
      expect(res.stderr).toHaveLength(0);
    } finally {
      runtime.close();
      server.close();
    }
  });
});
