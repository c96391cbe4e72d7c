import { createHash } from 'node:crypto';
import type {
  Image,
  ImageServiceTypes,
  ImageSpec,
  ListImagesRequest,
  PullImageRequest,
  RemoveImageRequest,
} from '../generated/types.js';
import type { PartialMessage } from '../options.js';
import { type HandlerMap, StatusError } from './status-error.js';

/** An image known to the in-memory server. @public */
export interface FakeImage {
  /** Reference, e.g. `localhost/kubelet-kit/busybox:1.0` or `busybox` (normalized like Docker). */
  ref: string;
  /** Size in bytes. Default 1 MB. */
  size?: number;
  /** Pinned images are never garbage-collected by the kubelet. */
  pinned?: boolean;
}

/**
 * Normalizes an image reference the way containerd does for Docker Hub names:
 * `busybox` → `docker.io/library/busybox:latest`.
 */
export function normalizeImageRef(ref: string): string {
  let name = ref;
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasDomain = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasDomain) name = `docker.io/${slash < 0 ? 'library/' : ''}${name}`;
  const lastPart = name.slice(name.lastIndexOf('/') + 1);
  if (!lastPart.includes(':') && !name.includes('@')) name = `${name}:latest`;
  return name;
}

/** The in-memory image store and the ImageService handlers over it. */
export class FakeImageService {
  readonly #images = new Map<string, Image>();
  readonly #registry = new Set<string>();
  pullUnknownImages: 'NotFound' | 'Unknown' | 'succeed';
  readonly #imageFsMountpoint: string;

  constructor(options: {
    imageFsMountpoint?: string;
    images?: readonly (string | FakeImage)[];
    registry?: readonly string[];
    pullUnknownImages?: 'NotFound' | 'Unknown' | 'succeed';
  }) {
    for (const image of options.images ?? []) this.add(image);
    for (const ref of options.registry ?? []) this.#registry.add(normalizeImageRef(ref));
    this.pullUnknownImages = options.pullUnknownImages ?? 'NotFound';
    this.#imageFsMountpoint = options.imageFsMountpoint ?? '/var/lib/kubelet-kit-fake/images';
  }

  /**
   * Stores an image. Imported images (the `images` option, `addImage`) have no repo digest, as
   * with `ctr images import`; pulled ones (`pulled`) carry one, as from a registry.
   */
  add(image: string | FakeImage, pulled = false): Image {
    const spec = typeof image === 'string' ? { ref: image } : image;
    const tag = normalizeImageRef(spec.ref);
    const digest = createHash('sha256').update(tag).digest('hex');
    const existing = this.resolve(tag);
    if (existing) return existing;
    const record: Image = {
      id: `sha256:${digest}`,
      repoTags: [tag],
      repoDigests: pulled ? [`${tag.replace(/:[^:/]+$/, '')}@sha256:${digest}`] : [],
      size: spec.size ?? 1_000_000,
      username: '',
      pinned: spec.pinned ?? false,
    };
    this.#images.set(record.id, record);
    return record;
  }

  /** Finds an image by tag (normalized), repo digest, id, or id without `sha256:`. */
  resolve(ref: string): Image | undefined {
    if (!ref) return undefined;
    const direct = this.#images.get(ref) ?? this.#images.get(`sha256:${ref}`);
    if (direct) return direct;
    const tag = normalizeImageRef(ref);
    for (const image of this.#images.values()) {
      if (
        image.repoTags.includes(tag) ||
        image.repoDigests.includes(ref) ||
        image.repoDigests.includes(tag)
      ) {
        return image;
      }
    }
    return undefined;
  }

  list(): Image[] {
    return [...this.#images.values()];
  }

  handlers(now: () => number): HandlerMap<ImageServiceTypes> {
    return {
      ListImages: (req: ListImagesRequest) => {
        const wanted = req.filter?.image?.image;
        const images = wanted
          ? [this.resolve(wanted)].filter((i): i is Image => i !== undefined)
          : this.list();
        return { images };
      },
      ImageStatus: (req) => {
        // CRI: a missing image is an empty response, not an error.
        const image = this.resolve(req.image?.image ?? '');
        return image ? { image, info: {} } : { info: {} };
      },
      PullImage: (req: PullImageRequest) => {
        const ref = req.image?.image ?? '';
        if (!ref) throw new StatusError('InvalidArgument', 'ImageSpec.image must not be empty');
        const existing = this.resolve(ref);
        if (existing) return { imageRef: imageRefOf(existing) };
        const tag = normalizeImageRef(ref);
        if (!this.#registry.has(tag) && this.pullUnknownImages === 'NotFound') {
          throw new StatusError(
            'NotFound',
            `failed to pull and unpack image "${tag}": failed to resolve reference "${tag}": ${tag}: not found`,
          );
        }
        if (!this.#registry.has(tag) && this.pullUnknownImages === 'Unknown') {
          const host = tag.slice(0, tag.indexOf('/'));
          throw new StatusError(
            'Unknown',
            `failed to pull and unpack image "${tag}": failed to resolve reference "${tag}": failed to do request: Head "https://${host}/v2/": dial tcp: connect: connection refused`,
          );
        }
        return { imageRef: imageRefOf(this.add(tag, true)) };
      },
      RemoveImage: (req: RemoveImageRequest) => {
        // Idempotent: removing a missing image succeeds.
        const image = this.resolve(req.image?.image ?? '');
        if (image) this.#images.delete(image.id);
        return {};
      },
      ImageFsInfo: () => {
        const images = this.list();
        return {
          imageFilesystems: [
            {
              timestamp: now() * 1e6,
              fsId: { mountpoint: this.#imageFsMountpoint },
              usedBytes: { value: images.reduce((sum, i) => sum + i.size, 0) },
              inodesUsed: { value: images.length },
            },
          ],
          containerFilesystems: [],
        };
      },
    };
  }
}

/** What containerd reports as an image's reference: its repo digest when it has one, else its id. */
export function imageRefOf(image: Image): string {
  return image.repoDigests[0] ?? image.id;
}

/** An ImageSpec for a stored image, as the runtime reports it on containers. */
export function imageSpecOf(image: PartialMessage<ImageSpec> | undefined): ImageSpec {
  return {
    image: image?.image ?? '',
    annotations: { ...(image?.annotations ?? {}) } as Record<string, string>,
    userSpecifiedImage: image?.userSpecifiedImage ?? '',
    runtimeHandler: image?.runtimeHandler ?? '',
    imageRef: image?.imageRef ?? '',
  };
}
