import { noopLogger } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import { KubeRuntimeError } from '../src/errors.js';
import { ImageManager, type ImageService, TokenBucket } from '../src/images.js';
import { makePod } from './harness.js';

// Upstream's throttleImagePulling (pkg/kubelet/images/helpers.go): registryPullQPS/registryBurst.

describe('TokenBucket', () => {
  it('starts full with burst tokens and refills at qps through the clock', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(clock, 5, 10);
    for (let i = 0; i < 10; i++) expect(bucket.tryAccept()).toBe(true);
    expect(bucket.tryAccept()).toBe(false);
    clock.advance(199);
    expect(bucket.tryAccept()).toBe(false);
    clock.advance(1);
    expect(bucket.tryAccept()).toBe(true);
    expect(bucket.tryAccept()).toBe(false);
    // Never more than burst after a long pause.
    clock.advance(3_600_000);
    for (let i = 0; i < 10; i++) expect(bucket.tryAccept()).toBe(true);
    expect(bucket.tryAccept()).toBe(false);
  });
});

describe('ImageManager with registryPullQPS', () => {
  const setup = (qps: number | undefined, burst: number | undefined) => {
    const clock = new FakeClock();
    const pulled: string[] = [];
    const svc: ImageService = {
      imageStatus: async () => ({ info: {} }),
      listImages: async () => ({ images: [] }),
      pullImage: async (req) => {
        pulled.push(req.image?.image ?? '');
        return { imageRef: `sha256:${req.image?.image}` };
      },
    };
    const recorder = new InMemoryEventRecorder();
    const m = new ImageManager({
      imageService: svc,
      clock,
      recorder,
      logger: noopLogger,
      ...(qps !== undefined ? { registryPullQPS: qps } : {}),
      ...(burst !== undefined ? { registryBurst: burst } : {}),
    });
    const pull = (image: string) =>
      m.ensureImageExists({
        pod: makePod({ containers: [] }),
        container: { name: image, image },
        pullSecrets: [],
        objectRef: { kind: 'Pod' },
      });
    return { clock, pulled, recorder, pull };
  };

  it('fails a pull over the limit with ErrImagePull "pull QPS exceeded"', async () => {
    const { clock, pulled, recorder, pull } = setup(1, 2);
    await pull('a:1');
    await pull('b:1');
    const err = await pull('c:1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeRuntimeError);
    expect(err).toMatchObject({ code: 'ErrImagePull', message: 'pull QPS exceeded' });
    expect(recorder.events.at(-1)).toMatchObject({
      reason: 'Failed',
      message: 'Failed to pull image "c:1": pull QPS exceeded',
    });
    expect(pulled).toEqual(['a:1', 'b:1']);
    clock.advance(1000);
    await pull('d:1');
    expect(pulled).toEqual(['a:1', 'b:1', 'd:1']);
  });

  it('does not limit without a QPS (0 or unset)', async () => {
    for (const qps of [undefined, 0]) {
      const { pulled, pull } = setup(qps, 1);
      for (const image of ['a:1', 'b:1', 'c:1']) await pull(image);
      expect(pulled).toHaveLength(3);
    }
  });
});
