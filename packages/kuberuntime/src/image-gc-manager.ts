import fs from 'node:fs/promises';
import type { Clock, EventObjectRef, EventRecorder, Logger, Timer } from '@kubelet-kit/core';
import type { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { errorMessage } from './errors.js';

// Image garbage collection (upstream `pkg/kubelet/images/image_gc_manager.go`).

/** Upstream's `ImageGCPeriod`: how often the kubelet collects images, ms. @public */
export const ImageGCPeriodMs = 5 * 60_000;

/** Upstream's image GC defaults (KubeletConfiguration v1beta1). @public */
export const DefaultImageGCPolicy: ImageGCPolicy = {
  highThresholdPercent: 85,
  lowThresholdPercent: 80,
  minAgeMs: 2 * 60_000,
  maxAgeMs: 0,
};

/** Upstream `ImageGCPolicy`. @public */
export interface ImageGCPolicy {
  /** Image filesystem usage, percent, at and above which GC runs. */
  readonly highThresholdPercent: number;
  /** Usage, percent, that GC frees down to. */
  readonly lowThresholdPercent: number;
  /** An image detected more recently than this is never collected for space, ms. */
  readonly minAgeMs: number;
  /** An unused image unused for longer than this is collected whatever the usage, ms; 0 off. */
  readonly maxAgeMs: number;
}

/** The image filesystem's size, as upstream's stats provider reports it (bytes). @public */
export interface ImageFsStats {
  readonly capacityBytes: number;
  readonly availableBytes: number;
}

/** The CRI calls image GC makes. @public */
export interface ImageGCRuntime {
  readonly runtimeService: Pick<RuntimeServiceClient, 'listContainers'>;
  readonly imageService: Pick<ImageServiceClient, 'listImages' | 'removeImage' | 'imageFsInfo'>;
}

/** Options of {@link ImageGCManager}. @public */
export interface ImageGCManagerOptions extends ImageGCRuntime {
  readonly policy?: Partial<ImageGCPolicy>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly recorder: EventRecorder;
  /** The Node's name, for the events. */
  readonly nodeName: string;
  /**
   * The image filesystem's capacity and free space. Default: statfs of the mount point CRI
   * ImageFsInfo names (upstream: cadvisor for the filesystem holding the images).
   */
  readonly imageFsStats?: (signal?: AbortSignal) => Promise<ImageFsStats>;
  /** How often {@link ImageGCManager.start} collects, ms; default {@link ImageGCPeriodMs}. */
  readonly periodMs?: number;
  /**
   * References (tag, digest or ID) of images kept as if pinned: the runtime's sandbox image on
   * runtimes that do not pin it (containerd before 1.7), as older kubelets kept
   * `--pod-infra-container-image`. Asked once per collection; a failure keeps nothing extra.
   */
  readonly exemptImages?: (signal?: AbortSignal) => Promise<readonly string[]>;
}

/** What the manager knows of an image (upstream `imageRecord`). @public */
export interface ImageRecord {
  /** When the image was first seen, ms. */
  firstDetected: number;
  /** When a container last used it, ms (0: never seen in use). */
  lastUsed: number;
  size: number;
  pinned: boolean;
}

interface EvictionInfo extends ImageRecord {
  readonly id: string;
}

/**
 * Checks a policy as upstream's `NewImageGCManager` and KubeletConfiguration validation do;
 * returns the problem, or undefined.
 *
 * @public
 */
export function validateImageGCPolicy(policy: ImageGCPolicy): string | undefined {
  const { highThresholdPercent: high, lowThresholdPercent: low } = policy;
  if (!Number.isInteger(high) || high < 0 || high > 100)
    return `invalid HighThresholdPercent ${high}, must be in range [0-100]`;
  if (!Number.isInteger(low) || low < 0 || low > 100)
    return `invalid LowThresholdPercent ${low}, must be in range [0-100]`;
  if (low > high) return `LowThresholdPercent ${low} can not be higher than HighThresholdPercent ${high}`;
  if (policy.minAgeMs < 0) return `invalid MinAge ${policy.minAgeMs}ms, must not be negative`;
  if (policy.maxAgeMs < 0) return `invalid MaxAge ${policy.maxAgeMs}ms, must not be negative`;
  if (policy.maxAgeMs > 0 && policy.maxAgeMs < policy.minAgeMs)
    return `imageMaximumGCAge ${policy.maxAgeMs}ms must not be less than imageMinimumGCAge ${policy.minAgeMs}ms`;
  return undefined;
}

/** statfs of the mount point the runtime names for its images (capacity and free space). */
export async function statfsImageFs(
  imageService: Pick<ImageServiceClient, 'imageFsInfo'>,
  signal?: AbortSignal,
): Promise<ImageFsStats> {
  const info = await imageService.imageFsInfo({}, { signal });
  const mountpoint = info.imageFilesystems[0]?.fsId?.mountpoint;
  if (!mountpoint) throw new Error('the runtime reports no image filesystem');
  const st = await fs.statfs(mountpoint);
  return { capacityBytes: st.blocks * st.bsize, availableBytes: st.bavail * st.bsize };
}

/**
 * Removes unused images, least recently used first, when the image filesystem fills up, and
 * images unused for longer than the maximum age (upstream `realImageGCManager`).
 *
 * @public
 */
export class ImageGCManager {
  readonly policy: ImageGCPolicy;
  readonly #o: ImageGCManagerOptions;
  readonly #nodeRef: EventObjectRef;
  readonly #records = new Map<string, ImageRecord>();
  readonly #imageFsStats: (signal?: AbortSignal) => Promise<ImageFsStats>;
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;
  #abort: AbortController | undefined;

  constructor(options: ImageGCManagerOptions) {
    const policy = { ...DefaultImageGCPolicy, ...options.policy };
    const problem = validateImageGCPolicy(policy);
    if (problem) throw new RangeError(problem);
    this.policy = policy;
    this.#o = options;
    // Upstream's nodeRef carries the node's name as its UID.
    this.#nodeRef = { kind: 'Node', name: options.nodeName, uid: options.nodeName };
    this.#imageFsStats = options.imageFsStats ?? ((signal) => statfsImageFs(options.imageService, signal));
  }

  /**
   * Collects now and then every period until {@link ImageGCManager.stop}, as upstream's
   * `StartGarbageCollection` (`wait.Until` runs at once). A failure is logged; an event
   * `ImageGCFailed` is recorded only when it fails twice in a row, as upstream.
   */
  start(): void {
    if (this.#timer) return;
    const beganGC = this.#o.clock.now();
    let prevFailed = false;
    const abort = new AbortController();
    this.#abort = abort;
    const run = () => {
      if (this.#running) return;
      this.#running = this.garbageCollect(beganGC, abort.signal)
        .then(() => {
          if (prevFailed) this.#o.logger.info('image garbage collection succeeded');
          prevFailed = false;
        })
        .catch((err: unknown) => {
          if (abort.signal.aborted) return;
          if (prevFailed) {
            this.#o.logger.error(
              { err: errorMessage(err) },
              'image garbage collection failed multiple times in a row',
            );
            this.#o.recorder.event(this.#nodeRef, 'Warning', 'ImageGCFailed', errorMessage(err));
          } else {
            this.#o.logger.error(
              { err: errorMessage(err) },
              'image garbage collection failed once; stats initialization may not have completed yet',
            );
          }
          prevFailed = true;
        })
        .finally(() => {
          this.#running = undefined;
        });
    };
    this.#timer = this.#o.clock.setInterval(run, this.#o.periodMs ?? ImageGCPeriodMs);
    run();
  }

  /** Stops the periodic collection and waits for a running one. */
  async stop(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#abort?.abort();
    await this.#running;
  }

  /** Images known, by ID. */
  records(): ReadonlyMap<string, Readonly<ImageRecord>> {
    return this.#records;
  }

  /**
   * Upstream `detectImages`: records images first seen now, and marks the images of the
   * runtime's containers (running or not) used now. Returns the IDs in use.
   */
  async detectImages(detectTime: number, signal?: AbortSignal): Promise<Set<string>> {
    const { images } = await this.#o.imageService.listImages({}, { signal });
    const { containers } = await this.#o.runtimeService.listContainers({}, { signal });
    // A container names its image by ID (imageRef); by tag or digest when the runtime says so.
    const refsInUse = new Set<string>();
    for (const c of containers) {
      if (c.imageRef) refsInUse.add(c.imageRef);
      if (c.image?.image) refsInUse.add(c.image.image);
    }
    const exempt = new Set(await this.#o.exemptImages?.(signal).catch(() => []));
    const now = this.#o.clock.now();
    const inUse = new Set<string>();
    const current = new Set<string>();
    for (const image of images) {
      current.add(image.id);
      let record = this.#records.get(image.id);
      if (!record) {
        record = { firstDetected: detectTime, lastUsed: 0, size: 0, pinned: false };
        this.#records.set(image.id, record);
      }
      const used =
        refsInUse.has(image.id) ||
        image.repoTags.some((t) => refsInUse.has(t)) ||
        image.repoDigests.some((d) => refsInUse.has(d));
      if (used) {
        inUse.add(image.id);
        record.lastUsed = now;
      }
      record.size = Number(image.size);
      record.pinned =
        image.pinned ||
        exempt.has(image.id) ||
        image.repoTags.some((t) => exempt.has(t)) ||
        image.repoDigests.some((d) => exempt.has(d));
    }
    for (const id of [...this.#records.keys()]) if (!current.has(id)) this.#records.delete(id);
    return inUse;
  }

  /** Images neither in use nor pinned, least recently used (then first detected) first. */
  async #imagesInEvictionOrder(freeTime: number, signal?: AbortSignal): Promise<EvictionInfo[]> {
    const inUse = await this.detectImages(freeTime, signal);
    const out: EvictionInfo[] = [];
    for (const [id, record] of this.#records) {
      if (inUse.has(id) || record.pinned) continue;
      out.push({ id, ...record });
    }
    out.sort((a, b) =>
      a.lastUsed === b.lastUsed ? a.firstDetected - b.firstDetected : a.lastUsed - b.lastUsed,
    );
    return out;
  }

  async #freeImage(image: EvictionInfo, reason: 'age' | 'space', signal?: AbortSignal): Promise<void> {
    this.#o.logger.info({ imageID: image.id, size: image.size, reason }, 'removing image to free bytes');
    await this.#o.imageService.removeImage({ image: { image: image.id } }, { signal });
    this.#records.delete(image.id);
  }

  /** Upstream `freeOldImages`: removes images unused for longer than the maximum age. */
  async #freeOldImages(
    images: EvictionInfo[],
    freeTime: number,
    beganGC: number,
    signal?: AbortSignal,
  ): Promise<EvictionInfo[]> {
    const maxAge = this.policy.maxAgeMs;
    // Until the kubelet has run for the maximum age, an image's last use is not known well enough.
    if (maxAge === 0 || freeTime - beganGC <= maxAge) return images;
    const remaining: EvictionInfo[] = [];
    const errors: string[] = [];
    for (const image of images) {
      if (freeTime - image.lastUsed > maxAge) {
        try {
          await this.#freeImage(image, 'age', signal);
          continue;
        } catch (err) {
          errors.push(errorMessage(err));
        }
      }
      remaining.push(image);
    }
    if (errors.length > 0)
      throw new Error(
        `wanted to free images older than ${maxAge}ms, encountered errors in image deletion: ${aggregate(errors)}`,
      );
    return remaining;
  }

  /** Upstream `freeSpace`: removes images in order until `bytesToFree` are freed; returns bytes freed. */
  async #freeSpace(
    bytesToFree: number,
    freeTime: number,
    images: EvictionInfo[],
    signal?: AbortSignal,
  ): Promise<number> {
    let freed = 0;
    const errors: string[] = [];
    for (const image of images) {
      // Used at or after this collection began: a container has just started on it.
      if (image.lastUsed >= freeTime) continue;
      // Just pulled: a container may be about to use it.
      if (freeTime - image.firstDetected < this.policy.minAgeMs) continue;
      try {
        await this.#freeImage(image, 'space', signal);
      } catch (err) {
        errors.push(errorMessage(err));
        continue;
      }
      freed += image.size;
      if (freed >= bytesToFree) break;
    }
    if (errors.length > 0)
      throw new Error(
        `wanted to free ${bytesToFree} bytes, but freed ${freed} bytes space with errors in image deletion: ${aggregate(errors)}`,
      );
    return freed;
  }

  /**
   * Upstream `GarbageCollect`: the maximum-age pass, then, when usage is at or above the high
   * threshold, frees down to the low threshold. `beganGC` is when collection started (ms).
   */
  async garbageCollect(beganGC: number, signal?: AbortSignal): Promise<void> {
    const freeTime = this.#o.clock.now();
    let images = await this.#imagesInEvictionOrder(freeTime, signal);
    images = await this.#freeOldImages(images, freeTime, beganGC, signal);
    const stats = await this.#imageFsStats(signal);
    const capacity = Math.max(0, Math.trunc(stats.capacityBytes));
    let available = Math.max(0, Math.trunc(stats.availableBytes));
    if (available > capacity) {
      this.#o.logger.info({ available, capacity }, 'availability is larger than capacity');
      available = capacity;
    }
    if (capacity === 0) {
      const msg = 'invalid capacity 0 on image filesystem';
      this.#o.recorder.event(this.#nodeRef, 'Warning', 'InvalidDiskCapacity', msg);
      throw new Error(msg);
    }
    const usagePercent = 100 - Math.trunc((available * 100) / capacity);
    if (usagePercent < this.policy.highThresholdPercent) return;
    const amountToFree = Math.trunc((capacity * (100 - this.policy.lowThresholdPercent)) / 100) - available;
    this.#o.logger.info(
      { usage: usagePercent, highThreshold: this.policy.highThresholdPercent, amountToFree },
      'disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold',
    );
    const freed = await this.#freeSpace(amountToFree, freeTime, images, signal);
    if (freed < amountToFree) {
      const msg = `Failed to garbage collect required amount of images. Attempted to free ${amountToFree} bytes, but only found ${freed} bytes eligible to free.`;
      this.#o.recorder.event(this.#nodeRef, 'Warning', 'FreeDiskSpaceFailed', msg);
      throw new Error(msg);
    }
  }

  /**
   * Upstream `DeleteUnusedImages` (for the eviction manager): removes every image not in use,
   * not pinned and older than the minimum age.
   */
  async deleteUnusedImages(signal?: AbortSignal): Promise<void> {
    this.#o.logger.info('attempting to delete unused images');
    const freeTime = this.#o.clock.now();
    const images = await this.#imagesInEvictionOrder(freeTime, signal);
    await this.#freeSpace(Number.MAX_SAFE_INTEGER, freeTime, images, signal);
  }
}

/** As Go's `errors.NewAggregate(...).Error()`: one error bare, several in brackets. */
function aggregate(errors: readonly string[]): string {
  return errors.length === 1 ? (errors[0] ?? '') : `[${errors.join(', ')}]`;
}
