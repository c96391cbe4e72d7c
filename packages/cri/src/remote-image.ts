import { imageServiceDefinition } from './generated/services.js';
import type {
  ImageFsInfoRequest,
  ImageFsInfoResponse,
  ImageStatusRequest,
  ImageStatusResponse,
  ListImagesRequest,
  ListImagesResponse,
  PullImageRequest,
  PullImageResponse,
  RemoveImageRequest,
  RemoveImageResponse,
  StreamImagesRequest,
  StreamImagesResponse,
} from './generated/types.js';
import { CriConnection } from './grpc-call.js';
import {
  type CallOptions,
  type CriClientOptions,
  DEFAULT_PULL_IMAGE_TIMEOUT_MS,
  type PartialMessage,
} from './options.js';

/**
 * Promise client of the CRI v1 `ImageService` (upstream: `remote_image.go`). Same conventions
 * as {@link RuntimeServiceClient}; `pullImage` has its own, longer default deadline.
 * @public
 */
export class ImageServiceClient {
  readonly #conn: CriConnection;
  readonly #pullTimeoutMs: number;
  /** The endpoint this client dials. */
  readonly endpoint: string;

  constructor(options: CriClientOptions) {
    this.#conn = new CriConnection(imageServiceDefinition, options);
    this.#pullTimeoutMs = options.pullImageTimeoutMs ?? DEFAULT_PULL_IMAGE_TIMEOUT_MS;
    this.endpoint = options.endpoint;
  }

  /**
   * ListImages lists existing images.
   */
  listImages(
    request: PartialMessage<ListImagesRequest> = {},
    options?: CallOptions,
  ): Promise<ListImagesResponse> {
    return this.#conn.unary('ListImages', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StreamImages returns a stream of images.
   * This is an alternative to ListImages that streams results in lists of at
   * least one item, avoiding the gRPC message size limit for nodes with many
   * images. The number of items per list may vary depending on the container
   * runtime. Each item must appear in exactly one response and must not be
   * duplicated across responses in the same stream. The server must close the
   * stream with EOF after all items have been sent. The kubelet collects all
   * items from the stream and processes them all at once after the stream
   * completes. The kubelet enforces a timeout on the entire stream and will
   * discard partial results if the stream is not completed in time.
   * Feature gate: CRIListStreaming
   * See https://kep.k8s.io/5825 for more details.
   */
  streamImages(
    request: PartialMessage<StreamImagesRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<StreamImagesResponse> {
    return this.#conn.stream('StreamImages', request, options, this.#conn.defaultTimeoutMs, false);
  }

  /**
   * ImageStatus returns the status of the image. If the image is not
   * present, returns a response with ImageStatusResponse.Image set to
   * nil.
   */
  imageStatus(
    request: PartialMessage<ImageStatusRequest>,
    options?: CallOptions,
  ): Promise<ImageStatusResponse> {
    // As upstream: an image that is reported must come with its id and size.
    return this.#conn.unary('ImageStatus', request, options, this.#conn.defaultTimeoutMs, (res) =>
      !res.image || (res.image.id && res.image.size !== 0)
        ? undefined
        : `image ${JSON.stringify(request.image?.image ?? '')} is reported without an id or size`,
    );
  }

  /**
   * PullImage pulls an image with authentication config.
   */
  pullImage(request: PartialMessage<PullImageRequest>, options?: CallOptions): Promise<PullImageResponse> {
    return this.#conn.unary('PullImage', request, options, this.#pullTimeoutMs, (res) =>
      res.imageRef
        ? undefined
        : `runtime returned no imageRef for image ${JSON.stringify(request.image?.image ?? '')}`,
    );
  }

  /**
   * RemoveImage removes the image.
   * This call is idempotent, and must not return an error if the image has
   * already been removed.
   * Note that if the image is referenced by multiple tags (even across different repositories
   * if they resolve to the same image digest), removing the image by a single tag
   * will remove all of its tags. For example, if `repo/image:v1` and `another_repo/image:latest`
   * point to the same image, removing `repo/image:v1` will also remove `another_repo/image:latest`.
   * The next call to ListImages, ImageStatus, ImageFsInfo will not return this image.
   * The resources (e.g. disk space) may be cleaned asynchronously
   * and not guaranteed to be cleaned up by the time this method returns.
   */
  removeImage(
    request: PartialMessage<RemoveImageRequest>,
    options?: CallOptions,
  ): Promise<RemoveImageResponse> {
    return this.#conn.unary('RemoveImage', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ImageFSInfo returns information of the filesystem that is used to store images.
   * Usage information may include images that were removed, but are still being cleaned up.
   */
  imageFsInfo(
    request: PartialMessage<ImageFsInfoRequest> = {},
    options?: CallOptions,
  ): Promise<ImageFsInfoResponse> {
    return this.#conn.unary('ImageFsInfo', request, options, this.#conn.defaultTimeoutMs);
  }

  /** Closes the channel. */
  close(): void {
    this.#conn.close();
  }
}
