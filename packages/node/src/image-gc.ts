import type { Clock, EventRecorder, Logger } from '@kubelet-kit/core';
import type { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { ImageGCManager, type ImageGCPolicy } from '@kubelet-kit/kuberuntime';

// The agent's image options (upstream's KubeletConfiguration image fields and their validation in
// pkg/kubelet/apis/config/validation), and the image GC manager built from them.

/** The image options of AgentOptions, by their AgentOptions names. */
export interface ImageAgentOptions {
  readonly imageGCHighThresholdPercent?: number | undefined;
  readonly imageGCLowThresholdPercent?: number | undefined;
  readonly imageMinimumGCAgeMs?: number | undefined;
  readonly imageMaximumGCAgeMs?: number | undefined;
  readonly imageGCPeriodMs?: number | undefined;
  readonly serializeImagePulls?: boolean | undefined;
  readonly maxParallelImagePulls?: number | undefined;
  readonly registryPullQPS?: number | undefined;
  readonly registryBurst?: number | undefined;
}

/** What the runtime manager gets for pulls. */
export interface ImagePullSettings {
  readonly maxParallelImagePulls: number;
  readonly registryPullQPS: number;
  readonly registryBurst: number;
}

/** Go's `time.Duration.String()` for whole milliseconds (`2m0s`, `1h0m0s`, `500ms`). */
function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`;
}

/** The problems of the image options, with upstream's messages (empty when valid). */
export function validateImageOptions(o: ImageAgentOptions): string[] {
  const errors: string[] = [];
  const high = o.imageGCHighThresholdPercent ?? 85;
  const low = o.imageGCLowThresholdPercent ?? 80;
  const minAge = o.imageMinimumGCAgeMs ?? 120_000;
  const maxAge = o.imageMaximumGCAgeMs ?? 0;
  const inRange = (n: number) => Number.isInteger(n) && n >= 0 && n <= 100;
  if (!inRange(high))
    errors.push(
      `invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) ${high} must be between 0 and 100, inclusive`,
    );
  if (!inRange(low))
    errors.push(
      `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be between 0 and 100, inclusive`,
    );
  if (low >= high)
    errors.push(
      `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${high}`,
    );
  if (minAge < 0)
    errors.push(`invalid configuration: imageMinimumGCAge ${goDuration(minAge)} must not be negative`);
  if (maxAge < 0)
    errors.push(`invalid configuration: imageMaximumGCAge ${goDuration(maxAge)} must not be negative`);
  if (maxAge > 0 && maxAge <= minAge)
    errors.push(
      `invalid configuration: imageMaximumGCAge ${goDuration(maxAge)} must be greater than imageMinimumGCAge ${goDuration(minAge)}`,
    );
  if (o.imageGCPeriodMs !== undefined && !(o.imageGCPeriodMs > 0))
    errors.push(`invalid configuration: imageGCPeriod ${o.imageGCPeriodMs}ms must be positive`);
  if ((o.registryBurst ?? 10) < 0)
    errors.push(
      `invalid configuration: registryBurst (--registry-burst) ${o.registryBurst} must not be a negative number`,
    );
  if ((o.registryPullQPS ?? 5) < 0)
    errors.push(
      `invalid configuration: registryPullQPS (--registry-qps) ${o.registryPullQPS} must not be a negative number`,
    );
  const max = o.maxParallelImagePulls;
  if (max !== undefined && !(max >= 1))
    errors.push(`invalid configuration: maxParallelImagePulls ${max} must be a positive number`);
  if ((o.serializeImagePulls ?? true) && max !== undefined && max > 1)
    errors.push(
      'invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false',
    );
  return errors;
}

/** Throws the first problem of the options as a RangeError (the CLI shows it as a usage error). */
export function checkImageOptions(o: ImageAgentOptions): void {
  const [first] = validateImageOptions(o);
  if (first) throw new RangeError(first);
}

/**
 * Upstream's puller choice: serial pulls unless `serializeImagePulls` is false, then up to
 * `maxParallelImagePulls` (unset: no bound); registry QPS 5 and burst 10 by default.
 */
export function imagePullSettings(o: ImageAgentOptions): ImagePullSettings {
  const serial = o.serializeImagePulls ?? true;
  return {
    maxParallelImagePulls: serial ? 1 : (o.maxParallelImagePulls ?? Number.POSITIVE_INFINITY),
    registryPullQPS: o.registryPullQPS ?? 5,
    registryBurst: o.registryBurst ?? 10,
  };
}

/** The GC policy the options ask for (upstream defaults for what is unset). */
export function imageGCPolicy(o: ImageAgentOptions): ImageGCPolicy {
  return {
    highThresholdPercent: o.imageGCHighThresholdPercent ?? 85,
    lowThresholdPercent: o.imageGCLowThresholdPercent ?? 80,
    minAgeMs: o.imageMinimumGCAgeMs ?? 120_000,
    maxAgeMs: o.imageMaximumGCAgeMs ?? 0,
  };
}

/**
 * The runtime's sandbox image, from CRI Status verbose info (containerd: `config.sandboxImage`);
 * empty when the runtime does not say. Remembered once known.
 */
export function runtimeSandboxImage(
  runtimeService: Pick<RuntimeServiceClient, 'status'>,
): (signal?: AbortSignal) => Promise<readonly string[]> {
  let known: readonly string[] | undefined;
  return async (signal) => {
    if (known) return known;
    const res = await runtimeService.status({ verbose: true }, { signal });
    let image: unknown;
    try {
      image = (JSON.parse(res.info.config ?? '{}') as { sandboxImage?: unknown }).sandboxImage;
    } catch {
      return [];
    }
    if (typeof image !== 'string' || image === '') return [];
    // Both the name as configured and containerd's normalized form of a Docker Hub name.
    known = [image, ...(image.includes('/') ? [] : [`docker.io/library/${image}`])];
    return known;
  };
}

/** The agent's image GC manager over its CRI clients. */
export function createImageGC(
  o: ImageAgentOptions,
  deps: {
    readonly runtimeService: Pick<RuntimeServiceClient, 'listContainers' | 'status'>;
    readonly imageService: Pick<ImageServiceClient, 'listImages' | 'removeImage' | 'imageFsInfo'>;
    readonly clock: Clock;
    readonly logger: Logger;
    readonly recorder: EventRecorder;
    readonly nodeName: string;
  },
): ImageGCManager {
  return new ImageGCManager({
    ...deps,
    policy: imageGCPolicy(o),
    exemptImages: runtimeSandboxImage(deps.runtimeService),
    ...(o.imageGCPeriodMs !== undefined ? { periodMs: o.imageGCPeriodMs } : {}),
  });
}
