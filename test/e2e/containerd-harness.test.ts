// Checks the private containerd that scripts/containerd/up.sh starts: it answers the CRI, is
// ready, and has the locally built test images. Talks gRPC directly (protobufjs + grpc-js) so it
// proves the harness independently of @kubelet-kit/cri.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const protoPath = fileURLToPath(new URL('../../packages/cri/proto/runtime/v1/api.proto', import.meta.url));
const busyboxImage = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';
const pauseImage = process.env.KUBELET_KIT_PAUSE_IMAGE ?? 'localhost/kubelet-kit/pause:1.0';

interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}
interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}
interface StatusResponse {
  status: { conditions: RuntimeCondition[] } | null;
}
interface ImageStatusResponse {
  image: { id: string; repoTags: string[]; size: string } | null;
}

class CriCaller {
  private readonly root = protobuf.loadSync(protoPath);
  private readonly client: grpc.Client;

  constructor(endpoint: string) {
    this.client = new grpc.Client(endpoint, grpc.credentials.createInsecure());
  }

  call<T>(service: string, method: string, request: object): Promise<T> {
    const def = this.root.lookupService(`runtime.v1.${service}`).methods[method];
    if (!def) throw new Error(`no method ${service}/${method} in ${protoPath}`);
    const reqType = this.root.lookupType(def.requestType);
    const resType = this.root.lookupType(def.responseType);
    return new Promise<T>((resolve, reject) => {
      this.client.makeUnaryRequest(
        `/runtime.v1.${service}/${method}`,
        (req: object) => Buffer.from(reqType.encode(reqType.fromObject(req)).finish()),
        (buf: Buffer) =>
          resType.toObject(resType.decode(buf), { enums: String, longs: String, defaults: true }) as T,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + 30_000 },
        (err, res) => (err || res === undefined ? reject(err ?? new Error('empty response')) : resolve(res)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

describe('private containerd (scripts/containerd/up.sh)', () => {
  let cri: CriCaller;

  beforeAll(() => {
    const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
    if (!endpoint) {
      throw new Error(
        'KUBELET_KIT_CRI_ENDPOINT is not set. As root: `source scripts/containerd/env.sh && ' +
          'bash scripts/containerd/up.sh`, then run the e2e tests from that shell (scripts/test.sh does both).',
      );
    }
    cri = new CriCaller(endpoint);
  });
  afterAll(() => cri?.close());

  it('answers Version as containerd speaking CRI v1', async () => {
    const v = await cri.call<VersionResponse>('RuntimeService', 'Version', { version: 'v1' });
    console.log(`containerd under test: ${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion})`);
    expect(v.runtimeName).toBe('containerd');
    expect(v.runtimeVersion).not.toBe('');
    expect(v.runtimeApiVersion).toBe('v1');
  });

  it('reports RuntimeReady and NetworkReady', async () => {
    const res = await cri.call<StatusResponse>('RuntimeService', 'Status', {});
    const conditions = res.status?.conditions ?? [];
    const byType = new Map(conditions.map((c) => [c.type, c]));
    expect(byType.get('RuntimeReady'), JSON.stringify(conditions)).toMatchObject({ status: true });
    expect(byType.get('NetworkReady'), JSON.stringify(conditions)).toMatchObject({ status: true });
  });

  it.each([busyboxImage, pauseImage])('has image %s', async (image) => {
    const res = await cri.call<ImageStatusResponse>('ImageService', 'ImageStatus', { image: { image } });
    expect(res.image, `${image} not found in namespace k8s.io`).not.toBeNull();
    expect(res.image?.repoTags).toContain(image);
    expect(res.image?.id).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('does not find an image that was never imported', async () => {
    const res = await cri.call<ImageStatusResponse>('ImageService', 'ImageStatus', {
      image: { image: 'localhost/kubelet-kit/does-not-exist:0' },
    });
    expect(res.image).toBeNull();
  });
});
