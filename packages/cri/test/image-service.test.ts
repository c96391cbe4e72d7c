import { describe, expect, test } from 'vitest';
import { BUSYBOX, harness } from './helpers.js';

describe('ImageService', () => {
  test('list, status, pull, remove and fs info', async () => {
    const { image } = await harness({ images: [BUSYBOX, { ref: 'pause', size: 700_000, pinned: true }] });
    const listed = (await image.listImages()).images;
    expect(listed.map((i) => i.repoTags[0]).sort()).toEqual([
      'docker.io/library/pause:latest',
      'localhost/kubelet-kit/busybox:1.0',
    ]);
    const pause = listed.find((i) => i.pinned);
    expect(pause).toMatchObject({ size: 700_000, id: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });

    // Short names, ids and digests all resolve, like containerd's local resolution.
    const byShort = await image.imageStatus({ image: { image: 'pause' } });
    expect(byShort.image?.id).toBe(pause?.id);
    expect((await image.imageStatus({ image: { image: pause?.id ?? '' } })).image?.id).toBe(pause?.id);
    // Imported images (like `ctr images import` here) have no repo digest.
    expect(pause?.repoDigests).toEqual([]);
    // A missing image is an empty answer, not an error.
    expect((await image.imageStatus({ image: { image: 'nginx:1' } })).image).toBeUndefined();

    const filtered = await image.listImages({ filter: { image: { image: BUSYBOX } } });
    expect(filtered.images.map((i) => i.repoTags[0])).toEqual([BUSYBOX]);

    const pulled = await image.pullImage({ image: { image: BUSYBOX } });
    expect(pulled.imageRef).toMatch(/^sha256:/);

    await image.removeImage({ image: { image: 'pause' } });
    await image.removeImage({ image: { image: 'pause' } }); // idempotent
    expect((await image.listImages()).images).toHaveLength(1);

    const fsInfo = await image.imageFsInfo();
    expect(fsInfo.imageFilesystems[0]?.usedBytes?.value).toBe(1_000_000);
    expect(fsInfo.imageFilesystems[0]?.inodesUsed?.value).toBe(1);
  });

  test('pull of an unknown image fails with NotFound unless configured to succeed', async () => {
    const { server, image } = await harness({ registry: ['registry.example/app:2'] });
    await expect(image.pullImage({ image: { image: 'nginx:1.25' } })).rejects.toMatchObject({
      code: 'NotFound',
      details: expect.stringContaining('docker.io/library/nginx:1.25: not found'),
    });
    // A pulled image has a repo digest, which is what PullImage (and containers) report as ref.
    const fromRegistry = await image.pullImage({ image: { image: 'registry.example/app:2' } });
    expect(fromRegistry.imageRef).toMatch(/^registry\.example\/app@sha256:[0-9a-f]{64}$/);
    const stored = (await image.imageStatus({ image: { image: 'registry.example/app:2' } })).image;
    expect(stored?.repoDigests).toEqual([fromRegistry.imageRef]);
    expect((await image.imageStatus({ image: { image: fromRegistry.imageRef } })).image?.id).toBe(stored?.id);
    server.setPullUnknownImages('succeed');
    await image.pullImage({ image: { image: 'nginx:1.25' } });
    expect(
      (await image.imageStatus({ image: { image: 'docker.io/library/nginx:1.25' } })).image,
    ).toBeDefined();
  });

  test('image pulls have their own default deadline', async () => {
    const { server, image } = await harness({}, { timeoutMs: 100, pullImageTimeoutMs: 2000 });
    server.setLatency('*', 300);
    await expect(image.listImages()).rejects.toMatchObject({ code: 'DeadlineExceeded' });
    await expect(image.pullImage({ image: { image: BUSYBOX } })).resolves.toMatchObject({
      imageRef: expect.stringMatching(/^sha256:/),
    });
  });
});
