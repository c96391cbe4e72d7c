import { fileURLToPath } from 'node:url';
import {
  type ContainerEventResponse,
  ContainerEventType,
  CriError,
  ImageServiceClient,
  RuntimeServiceClient,
} from '@kubelet-kit/cri';
import protobuf from 'protobufjs';
import { describe, expect, test } from 'vitest';
import { messageCodec } from '../src/codec.js';
import { containerConfig, harness, sandboxConfig } from './helpers.js';

/** protobufjs' own reflection of the proto: the reference the codec is checked against. */
const reference = protobuf.loadSync(fileURLToPath(new URL('../proto/runtime/v1/api.proto', import.meta.url)));
const referenceType = (name: string) => reference.lookupType(`runtime.v1.${name}`);

describe('GetContainerEvents', () => {
  test('on a runtime without it (containerd 1.6) the first next() fails with Unimplemented, no hang', async () => {
    const { runtime } = await harness({ containerEvents: false });
    const iterator = runtime.getContainerEvents()[Symbol.asyncIterator]();
    const err = await iterator.next().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(err).toMatchObject({ code: 'Unimplemented', method: 'GetContainerEvents' });
  });

  test('streams container lifecycle events and ends quietly on abort', async () => {
    const { server, runtime } = await harness({ containerEvents: true });
    const controller = new AbortController();
    const events: ContainerEventResponse[] = [];
    const done = (async () => {
      for await (const event of runtime.getContainerEvents({}, { signal: controller.signal })) {
        events.push(event);
        if (events.length === 4) controller.abort();
      }
    })();
    // Wait until the server has the subscription before generating events.
    await expect.poll(() => server.calls('GetContainerEvents').length).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('ev') });
    const { containerId } = await runtime.createContainer({ podSandboxId, config: containerConfig('c') });
    await runtime.startContainer({ containerId });
    server.exitContainer(containerId, 0);
    await runtime.removeContainer({ containerId });
    await done;
    expect(events.map((e) => e.containerEventType)).toEqual([
      ContainerEventType.CONTAINER_CREATED_EVENT,
      ContainerEventType.CONTAINER_STARTED_EVENT,
      ContainerEventType.CONTAINER_STOPPED_EVENT,
      ContainerEventType.CONTAINER_DELETED_EVENT,
    ]);
    expect(events.every((e) => e.containerId === containerId)).toBe(true);
    expect(events[2]?.containersStatuses[0]).toMatchObject({ id: containerId, reason: 'Completed' });
    expect(events[0]?.podSandboxStatus?.id).toBe(podSandboxId);
  });

  test('the server can switch events off at run time', async () => {
    const { server, runtime } = await harness({ containerEvents: true });
    server.setContainerEvents(false);
    await expect(runtime.getContainerEvents()[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: 'Unimplemented',
    });
  });
});

describe('coverage of the proto', () => {
  const protoPath = fileURLToPath(new URL('../proto/runtime/v1/api.proto', import.meta.url));
  const root = protobuf.loadSync(protoPath);
  const lower = (name: string) => name[0]?.toLowerCase() + name.slice(1);

  test.each([
    ['RuntimeService', RuntimeServiceClient],
    ['ImageService', ImageServiceClient],
  ] as const)('%s: the client has a method for every RPC', (service, client) => {
    const methods = root.lookupService(`runtime.v1.${service}`).methodsArray.map((m) => lower(m.name));
    const missing = methods.filter(
      (m) => typeof (client.prototype as unknown as Record<string, unknown>)[m] !== 'function',
    );
    expect(methods.length).toBeGreaterThan(5);
    expect(missing).toEqual([]);
  });

  test('every RPC round-trips: the request reaches the server decoded, the answer or status comes back', async () => {
    const { server, runtime, image } = await harness();
    const clients: Record<string, RuntimeServiceClient | ImageServiceClient> = {
      RuntimeService: runtime,
      ImageService: image,
    };
    const outcomes: Record<string, string> = {};
    for (const service of ['RuntimeService', 'ImageService']) {
      for (const method of root.lookupService(`runtime.v1.${service}`).methodsArray) {
        const client = clients[service] as unknown as Record<string, (req: unknown) => unknown>;
        // A field every request type has is not available; send an empty request, plus an id
        // field where the type has one, to see it arrive intact.
        const requestType = root.lookupType(method.requestType);
        const request: Record<string, unknown> = {};
        for (const idField of ['containerId', 'podSandboxId']) {
          if (requestType.fields[idField]) request[idField] = `id-${method.name}`;
        }
        server.clearCalls();
        const fn = client[lower(method.name)];
        if (!fn) throw new Error(`no method for ${method.name}`);
        const result = fn.call(client, request);
        let outcome: string;
        try {
          if (method.responseStream) {
            for await (const _ of result as AsyncIterable<unknown>) break;
          } else {
            await result;
          }
          outcome = 'ok';
        } catch (err) {
          expect(err).toBeInstanceOf(CriError);
          outcome = (err as CriError).code;
        }
        outcomes[method.name] = outcome;
        const calls = server.calls(method.name);
        expect(calls, method.name).toHaveLength(1);
        expect(calls[0]?.service).toBe(service);
        expect(calls[0]?.request, method.name).toMatchObject(request);
      }
    }
    // Spot-check the outcome table: implemented, NotFound for unknown ids, the rest Unimplemented.
    expect(outcomes).toMatchObject({
      Version: 'ok',
      Status: 'ok',
      ListPodSandbox: 'ok',
      ListContainers: 'ok',
      ContainerStatus: 'NotFound',
      PodSandboxStatus: 'NotFound',
      RemoveContainer: 'ok',
      RemovePodSandbox: 'ok',
      ExecSync: 'NotFound',
      Exec: 'NotFound',
      Attach: 'NotFound',
      PortForward: 'NotFound',
      ContainerStats: 'NotFound',
      ListContainerStats: 'ok',
      ListPodSandboxStats: 'ok',
      GetContainerEvents: 'Unimplemented',
      ListImages: 'ok',
      ImageStatus: 'ok',
      PullImage: 'InvalidArgument',
      ImageFsInfo: 'ok',
    });
  });
});

describe('codec', () => {
  test('env values go on the wire as UTF-8 bytes and int64 fields come back as numbers', () => {
    const codec = messageCodec('CreateContainerRequest');
    const wire = codec.encode({ config: { envs: [{ key: 'K', value: 'ünïcødé ✓' }] } });
    const decoded = referenceType('CreateContainerRequest').toObject(
      referenceType('CreateContainerRequest').decode(wire),
    ) as { config?: { envs?: { value?: Uint8Array }[] } };
    const raw = decoded.config?.envs?.[0]?.value;
    expect(raw).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(raw ?? []).toString('utf8')).toBe('ünïcødé ✓');
    expect(Buffer.from(raw ?? [])).toEqual(Buffer.from('ünïcødé ✓', 'utf8'));

    const status = messageCodec<{ status?: { createdAt: number; exitCode: number } }>(
      'ContainerStatusResponse',
    );
    const back = status.decode(
      status.encode({ status: { createdAt: 1_700_000_000_123_456_000, exitCode: 2 } }),
    );
    expect(typeof back.status?.createdAt).toBe('number');
    expect(back.status?.createdAt).toBe(1_700_000_000_123_456_000);
    expect(back.status?.exitCode).toBe(2);
  });
});

describe('codec reader', () => {
  const sandbox = messageCodec<{ id: string; createdAt: number; labels: Record<string, string> }>(
    'PodSandbox',
  );

  test('int64 fields decode to the same numbers protobufjs gives, negative and past 32 bits included', () => {
    const values = [
      0,
      1,
      127,
      128,
      2 ** 31,
      2 ** 32 - 1,
      2 ** 32,
      2 ** 40 + 5,
      2 ** 53 - 1,
      -1,
      -2,
      -(2 ** 32),
      -(2 ** 32) - 1,
      -(2 ** 53 - 1),
    ];
    for (const createdAt of values) {
      const wire = Buffer.from(
        referenceType('PodSandbox').encode(referenceType('PodSandbox').fromObject({ createdAt })).finish(),
      );
      expect(sandbox.decode(wire).createdAt).toBe(createdAt);
    }
  });

  test('strings: multi-byte UTF-8 and a real U+FFFD decode, invalid UTF-8 is rejected as protobufjs does', () => {
    const labels = { 'io.kubernetes.pod.name': 'pød-✓', replacement: 'a\uFFFDb' };
    const back = sandbox.decode(sandbox.encode({ id: 'ünï', labels }));
    expect(back.id).toBe('ünï');
    expect(back.labels).toEqual(labels);

    // Field 1 (id), length 2, bytes 0xc3 0x28: an invalid two-byte sequence.
    const invalid = Buffer.from([0x0a, 0x02, 0xc3, 0x28]);
    expect(() => referenceType('PodSandbox').decode(invalid)).toThrow();
    expect(() => sandbox.decode(invalid)).toThrow(/invalid UTF-8/);
  });

  test('a truncated string or varint is an error, not a short read', () => {
    expect(() => sandbox.decode(Buffer.from([0x0a, 0x05, 0x61]))).toThrow(RangeError);
    // Field 4 (created_at), a varint whose continuation bit never ends.
    expect(() => sandbox.decode(Buffer.from([0x20, 0xff, 0xff]))).toThrow(RangeError);
    expect(() => sandbox.decode(Buffer.from([0x20, ...Array(10).fill(0xff), 0x01]))).toThrow(/varint/);
  });
});
