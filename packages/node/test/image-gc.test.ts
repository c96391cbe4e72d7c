import { describe, expect, it } from 'vitest';
import { imageGCPolicy, imagePullSettings, validateImageOptions } from '../src/image-gc.js';

// Upstream's KubeletConfiguration validation of the image fields (validation_test.go cases).

describe('validateImageOptions', () => {
  it.each([
    [{}, []],
    [
      { imageGCHighThresholdPercent: 101 },
      [
        'invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive',
      ],
    ],
    [
      { imageGCLowThresholdPercent: -1 },
      [
        'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and 100, inclusive',
      ],
    ],
    [
      { imageGCHighThresholdPercent: 0, imageGCLowThresholdPercent: 0 },
      [
        'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 0 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 0',
      ],
    ],
    [
      { imageMaximumGCAgeMs: 60_000 },
      ['invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s'],
    ],
    [
      { registryPullQPS: -1, registryBurst: -1 },
      [
        'invalid configuration: registryBurst (--registry-burst) -1 must not be a negative number',
        'invalid configuration: registryPullQPS (--registry-qps) -1 must not be a negative number',
      ],
    ],
    [
      { serializeImagePulls: false, maxParallelImagePulls: 0 },
      ['invalid configuration: maxParallelImagePulls 0 must be a positive number'],
    ],
    [
      { maxParallelImagePulls: 2 },
      [
        'invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false',
      ],
    ],
    [{ serializeImagePulls: true, maxParallelImagePulls: 1 }, []],
    [{ imageGCHighThresholdPercent: 1, imageGCLowThresholdPercent: 0, imageMinimumGCAgeMs: 0 }, []],
  ])('%o', (options, want) => {
    expect(validateImageOptions(options)).toEqual(want);
  });
});

describe('imagePullSettings', () => {
  it('pulls serially by default, unbounded or up to the maximum when not serialized', () => {
    expect(imagePullSettings({})).toEqual({
      maxParallelImagePulls: 1,
      registryPullQPS: 5,
      registryBurst: 10,
    });
    expect(imagePullSettings({ serializeImagePulls: false }).maxParallelImagePulls).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(
      imagePullSettings({ serializeImagePulls: false, maxParallelImagePulls: 3, registryPullQPS: 0 }),
    ).toEqual({ maxParallelImagePulls: 3, registryPullQPS: 0, registryBurst: 10 });
  });
});

describe('imageGCPolicy', () => {
  it("takes upstream's defaults", () => {
    expect(imageGCPolicy({})).toEqual({
      highThresholdPercent: 85,
      lowThresholdPercent: 80,
      minAgeMs: 120_000,
      maxAgeMs: 0,
    });
  });
});
