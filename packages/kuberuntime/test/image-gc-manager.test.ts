import { noopLogger } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { type Container, type Image, ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { describe, expect, it } from 'vitest';
import {
  type ImageFsStats,
  ImageGCManager,
  type ImageGCPolicy,
  type ImageGCRuntime,
  validateImageGCPolicy,
} from '../src/image-gc-manager.js';

// Tables after upstream's pkg/kubelet/images/image_gc_manager_test.go.

const imageName = (id: number) => `image-${id}`;
function makeImage(id: number, size: number, pinned = false): Image {
  return { id: imageName(id), repoTags: [], repoDigests: [], size, username: '', pinned } as Image;
}
function makeContainer(id: number): Container {
  return { id: `container-${id}`, imageRef: imageName(id) } as Container;
}

/** Upstream's fake runtime: an image list and the containers of all pods. */
class FakeRuntime implements ImageGCRuntime {
  images: Image[] = [];
  containers: Container[] = [];
  removed: string[] = [];
  removeError: string | undefined;
  readonly runtimeService = {
    listContainers: async () => ({ containers: this.containers }),
  } as unknown as ImageGCRuntime['runtimeService'];
  readonly imageService = {
    listImages: async () => ({ images: this.images }),
    removeImage: async (req: { image?: { image?: string } }) => {
      if (this.removeError) throw new Error(this.removeError);
      const id = req.image?.image ?? '';
      this.removed.push(id);
      this.images = this.images.filter((i) => i.id !== id);
      return {};
    },
    imageFsInfo: async () => ({ imageFilesystems: [], containerFilesystems: [] }),
  } as unknown as ImageGCRuntime['imageService'];
}

function setup(policy: Partial<ImageGCPolicy> = {}, stats?: ImageFsStats | Error) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime();
  const recorder = new InMemoryEventRecorder();
  const manager = new ImageGCManager({
    runtimeService: runtime.runtimeService,
    imageService: runtime.imageService,
    policy: { highThresholdPercent: 90, lowThresholdPercent: 80, minAgeMs: 0, maxAgeMs: 0, ...policy },
    clock,
    logger: noopLogger,
    recorder,
    nodeName: 'node-a',
    imageFsStats: async () => {
      if (stats instanceof Error) throw stats;
      return stats ?? { capacityBytes: 1000, availableBytes: 1000 };
    },
  });
  return { clock, runtime, recorder, manager };
}

describe('detectImages', () => {
  it('records first-detected for new images and last-used for images of containers', async () => {
    const { clock, runtime, manager } = setup();
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 2048)];
    runtime.containers = [makeContainer(1), makeContainer(2)];
    const start = clock.now() - 1000;
    await manager.detectImages(start);
    const records = manager.records();
    expect(records.size).toBe(3);
    expect(records.get(imageName(0))).toMatchObject({ firstDetected: start, lastUsed: 0 });
    expect(records.get(imageName(1))?.firstDetected).toBe(start);
    expect(records.get(imageName(1))?.lastUsed).toBeGreaterThan(start);
  });

  it('keeps the first-detected time of known images and adds new ones; forgets removed ones', async () => {
    const { clock, runtime, manager } = setup();
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048)];
    runtime.containers = [makeContainer(1)];
    const start = clock.now();
    await manager.detectImages(start);
    clock.advance(1000);
    runtime.images = [makeImage(0, 1024), makeImage(2, 1024)];
    runtime.containers = [];
    const later = clock.now();
    await manager.detectImages(later);
    const records = manager.records();
    expect([...records.keys()].sort()).toEqual([imageName(0), imageName(2)]);
    expect(records.get(imageName(0))?.firstDetected).toBe(start);
    expect(records.get(imageName(2))).toMatchObject({ firstDetected: later, lastUsed: 0 });
  });

  it('counts a container naming its image by tag as using it', async () => {
    const { runtime, manager } = setup();
    runtime.images = [{ ...makeImage(0, 1), repoTags: ['docker.io/library/busybox:1'] } as Image];
    runtime.containers = [
      { id: 'c', imageRef: '', image: { image: 'docker.io/library/busybox:1' } } as Container,
    ];
    expect([...(await manager.detectImages(0))]).toEqual([imageName(0)]);
  });
});

describe('deleteUnusedImages', () => {
  it('removes all unused images', async () => {
    const { runtime, manager } = setup();
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 2048)];
    runtime.containers = [makeContainer(2)];
    await manager.deleteUnusedImages();
    expect(runtime.images.map((i) => i.id)).toEqual([imageName(2)]);
  });

  it('exempts pinned (sandbox) images', async () => {
    const { runtime, manager } = setup();
    runtime.images = [makeImage(0, 1024, true), makeImage(1, 2048)];
    await manager.deleteUnusedImages();
    expect(runtime.images.map((i) => i.id)).toEqual([imageName(0)]);
  });

  it('keeps images detected less than the minimum age ago', async () => {
    const { clock, runtime, manager } = setup({ minAgeMs: 60_000 });
    runtime.images = [makeImage(0, 1024)];
    await manager.deleteUnusedImages();
    expect(runtime.images).toHaveLength(1);
    clock.advance(60_000);
    await manager.deleteUnusedImages();
    expect(runtime.images).toHaveLength(0);
  });

  it('reports deletion errors with upstream message', async () => {
    const { runtime, manager } = setup();
    runtime.images = [makeImage(0, 1024)];
    runtime.removeError = 'boom';
    await expect(manager.deleteUnusedImages()).rejects.toThrow(
      `wanted to free ${Number.MAX_SAFE_INTEGER} bytes, but freed 0 bytes space with errors in image deletion: boom`,
    );
  });
});

describe('garbageCollect (freeSpace)', () => {
  it('ignores images of containers', async () => {
    const { runtime, manager } = setup({}, { capacityBytes: 3072, availableBytes: 0 });
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048)];
    runtime.containers = [makeContainer(1)];
    // 100% used: wants 3072*20% - 0 = 614 bytes; only image 0 is eligible.
    await manager.garbageCollect(0);
    expect(runtime.removed).toEqual([imageName(0)]);
  });

  it('removes the least recently used first', async () => {
    const { clock, runtime, manager } = setup({}, { capacityBytes: 5000, availableBytes: 0 });
    runtime.images = [makeImage(0, 1024), makeImage(1, 1024)];
    runtime.containers = [makeContainer(0), makeContainer(1)];
    await manager.detectImages(clock.now());
    clock.advance(1000);
    runtime.containers = [makeContainer(0)];
    await manager.detectImages(clock.now());
    clock.advance(1000);
    runtime.containers = [];
    // Wants 1000 bytes: image 1, used longer ago, goes; image 0 stays.
    await manager.garbageCollect(0);
    expect(runtime.removed).toEqual([imageName(1)]);
  });

  it('breaks ties by detected time', async () => {
    const { clock, runtime, manager } = setup({}, { capacityBytes: 5000, availableBytes: 0 });
    runtime.images = [makeImage(0, 1024)];
    runtime.containers = [makeContainer(0)];
    await manager.detectImages(clock.now());
    clock.advance(1000);
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 2048)];
    await manager.detectImages(clock.now());
    clock.advance(1000);
    runtime.images = [makeImage(0, 1024), makeImage(2, 2048), makeImage(1, 2048)];
    runtime.containers = [];
    // Never-used images go before the used one; between 1 and 2 the earlier detected, then
    // insertion order (both detected together). 2048 >= 1000: one image.
    await manager.garbageCollect(0);
    expect(runtime.removed).toEqual([imageName(1)]);
    expect(runtime.images).toHaveLength(2);
  });

  it('does nothing below the high threshold', async () => {
    const { runtime, manager } = setup({}, { capacityBytes: 1000, availableBytes: 500 });
    runtime.images = [makeImage(0, 450)];
    await manager.garbageCollect(0);
    expect(runtime.removed).toEqual([]);
  });

  it('fails when the stats fail', async () => {
    const { runtime, manager } = setup({}, new Error('stats unavailable'));
    runtime.images = [makeImage(0, 450)];
    await expect(manager.garbageCollect(0)).rejects.toThrow('stats unavailable');
  });

  it('frees enough to reach the low threshold', async () => {
    const { runtime, recorder, manager } = setup({}, { capacityBytes: 1000, availableBytes: 10 });
    runtime.images = [makeImage(0, 450)];
    await manager.garbageCollect(0);
    expect(runtime.removed).toEqual([imageName(0)]);
    expect(recorder.events).toEqual([]);
  });

  it('fails with FreeDiskSpaceFailed when not enough is eligible', async () => {
    const { runtime, recorder, manager } = setup({}, { capacityBytes: 1000, availableBytes: 10 });
    runtime.images = [makeImage(0, 50)];
    const msg =
      'Failed to garbage collect required amount of images. Attempted to free 190 bytes, but only found 50 bytes eligible to free.';
    await expect(manager.garbageCollect(0)).rejects.toThrow(msg);
    expect(recorder.events).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'FreeDiskSpaceFailed', message: msg }),
    ]);
  });

  it('refuses a capacity of 0 with InvalidDiskCapacity', async () => {
    const { recorder, manager } = setup({}, { capacityBytes: 0, availableBytes: 0 });
    await expect(manager.garbageCollect(0)).rejects.toThrow('invalid capacity 0 on image filesystem');
    expect(recorder.events[0]).toMatchObject({ reason: 'InvalidDiskCapacity' });
  });

  it('keeps images not old enough until the minimum age passes', async () => {
    const { clock, runtime, manager } = setup(
      { minAgeMs: 60_000 },
      { capacityBytes: 3072, availableBytes: 0 },
    );
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048)];
    runtime.containers = [makeContainer(1)];
    await expect(manager.garbageCollect(clock.now())).rejects.toThrow('only found 0 bytes');
    clock.advance(60_000);
    await manager.garbageCollect(clock.now());
    expect(runtime.removed).toEqual([imageName(0)]);
  });
});

describe('garbageCollect (maximum age)', () => {
  it('removes images unused for longer than the maximum age, once the kubelet has run that long', async () => {
    const { clock, runtime, manager } = setup({ maxAgeMs: 90_000 });
    const beganGC = clock.now();
    runtime.images = [makeImage(0, 1024), makeImage(1, 2048)];
    runtime.containers = [makeContainer(1)];
    await manager.garbageCollect(beganGC);
    clock.advance(30_000);
    await manager.garbageCollect(beganGC);
    runtime.containers = [];
    clock.advance(60_000);
    // Not past the maximum age since the start yet.
    await manager.garbageCollect(beganGC);
    expect(runtime.removed).toEqual([]);
    clock.advance(1);
    // Image 0 never used: too old; image 1 was last used 60 s ago.
    await manager.garbageCollect(beganGC);
    expect(runtime.removed).toEqual([imageName(0)]);
    clock.advance(30_000);
    await manager.garbageCollect(beganGC);
    expect(runtime.removed).toEqual([imageName(0), imageName(1)]);
  });

  it('is off at 0', async () => {
    const { clock, runtime, manager } = setup({ maxAgeMs: 0 });
    const beganGC = clock.now();
    runtime.images = [makeImage(0, 1024)];
    clock.advance(3_600_000);
    await manager.garbageCollect(beganGC);
    expect(runtime.removed).toEqual([]);
  });
});

describe('start', () => {
  it('collects at once and every 5 minutes; ImageGCFailed only on a repeated failure', async () => {
    const { clock, runtime, recorder, manager } = setup({}, { capacityBytes: 1000, availableBytes: 10 });
    runtime.images = [makeImage(0, 50)];
    manager.start();
    await clock.tick(0);
    expect(runtime.removed).toEqual([imageName(0)]);
    expect(recorder.events.map((e) => e.reason)).toEqual(['FreeDiskSpaceFailed']);
    await clock.tick(5 * 60_000);
    expect(recorder.events.map((e) => e.reason)).toEqual([
      'FreeDiskSpaceFailed',
      'FreeDiskSpaceFailed',
      'ImageGCFailed',
    ]);
    expect(recorder.events[2]).toMatchObject({ object: { kind: 'Node', name: 'node-a' } });
    await manager.stop();
    await clock.tick(10 * 60_000);
    expect(recorder.events).toHaveLength(3);
  });
});

describe('validateImageGCPolicy', () => {
  const base = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 0, maxAgeMs: 0 };
  it.each([
    [{ highThresholdPercent: 101 }, 'invalid HighThresholdPercent 101, must be in range [0-100]'],
    [{ lowThresholdPercent: 101 }, 'invalid LowThresholdPercent 101, must be in range [0-100]'],
    [
      { highThresholdPercent: 1, lowThresholdPercent: 2 },
      'LowThresholdPercent 2 can not be higher than HighThresholdPercent 1',
    ],
    [
      { minAgeMs: 120_000, maxAgeMs: 60_000 },
      'imageMaximumGCAge 60000ms must not be less than imageMinimumGCAge 120000ms',
    ],
    [{}, undefined],
  ])('%o', (policy, want) => {
    expect(validateImageGCPolicy({ ...base, ...policy })).toBe(want);
  });
});

describe('over the in-memory CRI', () => {
  it('reads usage from ImageFsInfo, keeps pinned and used images', async () => {
    const server = await InMemoryCriServer.start({
      images: [
        { ref: 'registry.example.com/pause:3.10', pinned: true, size: 100 },
        { ref: 'registry.example.com/a:1', size: 200 },
        { ref: 'registry.example.com/b:1', size: 300 },
      ],
    });
    const runtimeService = new RuntimeServiceClient({ endpoint: server.endpoint });
    const imageService = new ImageServiceClient({ endpoint: server.endpoint });
    try {
      const clock = new FakeClock();
      const manager = new ImageGCManager({
        runtimeService,
        imageService,
        policy: { highThresholdPercent: 1, lowThresholdPercent: 0, minAgeMs: 0 },
        clock,
        logger: noopLogger,
        recorder: new InMemoryEventRecorder(),
        nodeName: 'n',
        imageFsStats: async () => ({ capacityBytes: 600, availableBytes: 0 }),
      });
      await expect(manager.garbageCollect(clock.now())).rejects.toThrow('only found 500 bytes');
      const { images } = await imageService.listImages({});
      expect(images.map((i) => i.repoTags[0])).toEqual(['registry.example.com/pause:3.10']);
    } finally {
      runtimeService.close();
      imageService.close();
      await server.close();
    }
  });
});

describe('exemptImages', () => {
  it('keeps the images it names (by tag or ID) as pinned', async () => {
    const clock = new FakeClock();
    const runtime = new FakeRuntime();
    runtime.images = [
      { ...makeImage(0, 10), repoTags: ['localhost/pause:1'] } as Image,
      makeImage(1, 10),
      makeImage(2, 10),
    ];
    const manager = new ImageGCManager({
      runtimeService: runtime.runtimeService,
      imageService: runtime.imageService,
      policy: { minAgeMs: 0 },
      clock,
      logger: noopLogger,
      recorder: new InMemoryEventRecorder(),
      nodeName: 'n',
      exemptImages: async () => ['localhost/pause:1', imageName(2)],
    });
    await manager.deleteUnusedImages();
    expect(runtime.removed).toEqual([imageName(1)]);
  });
});
