import {
  Backoff,
  type Clock,
  type Container,
  type EventObjectRef,
  type EventRecorder,
  type Logger,
  type Pod,
  type Secret,
} from '@kubelet-kit/core';
import type { AuthConfig, ImageServiceClient, PartialMessage, PodSandboxConfig } from '@kubelet-kit/cri';
import PQueue from 'p-queue';
import { errorMessage, KubeRuntimeError } from './errors.js';
import { formatGoDuration } from './helpers.js';

// Image pulls with policy and backoff (upstream `pkg/kubelet/images`).

/** The ImageService calls kuberuntime makes. @public */
export type ImageService = Pick<ImageServiceClient, 'imageStatus' | 'pullImage' | 'listImages'>;

/** Upstream's image pull backoff: 10 s doubling to 300 s, per pod UID and image. */
export const imageBackOffInitialMs = 10_000;
export const imageBackOffMaxMs = 300_000;

/** Thrown for a reference that cannot be parsed (upstream ErrInvalidImageName). */
const referencePattern =
  /^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$/;

/** Parts of an image reference. */
export interface ParsedImageReference {
  /** Registry host (with port); `docker.io` when none. */
  readonly domain: string;
  readonly path: string;
  readonly tag: string;
  readonly digest: string;
}

/** Parses a Docker image reference; undefined when it is not one. */
export function parseImageReference(image: string): ParsedImageReference | undefined {
  if (!image || !referencePattern.test(image)) return undefined;
  let rest = image;
  let digest = '';
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag = '';
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf('/');
  const first = slash >= 0 ? rest.slice(0, slash) : '';
  const hasDomain =
    slash >= 0 &&
    (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase());
  return {
    domain: hasDomain ? first : 'docker.io',
    path: hasDomain ? rest.slice(slash + 1) : rest,
    tag,
    digest,
  };
}

/** Adds `:latest` to a reference with neither tag nor digest (upstream `applyDefaultImageTag`). */
export function applyDefaultImageTag(image: string): string {
  const ref = parseImageReference(image);
  if (!ref)
    throw new KubeRuntimeError(
      'InvalidImageName',
      `couldn't parse image name "${image}": invalid reference format`,
    );
  return ref.tag || ref.digest ? image : `${image}:latest`;
}

/** The pull policy, defaulted as the API server does: Always for `:latest` or no tag, else IfNotPresent. */
export function pullPolicyOf(container: Container): 'Always' | 'IfNotPresent' | 'Never' {
  const policy = container.imagePullPolicy;
  if (policy === 'Always' || policy === 'IfNotPresent' || policy === 'Never') return policy;
  const ref = parseImageReference(container.image ?? '');
  // As SetDefaults_Container: only the tag counts (no tag and no digest reads as `latest`), so
  // `:latest@sha256:…` is Always and a bare digest IfNotPresent.
  if (ref && (ref.tag === 'latest' || (ref.tag === '' && !ref.digest))) return 'Always';
  return 'IfNotPresent';
}

/** Upstream `shouldPullImage`. */
export function shouldPullImage(policy: 'Always' | 'IfNotPresent' | 'Never', present: boolean): boolean {
  if (policy === 'Never') return false;
  return policy === 'Always' || !present;
}

const dockerHubKeys = ['docker.io', 'index.docker.io', 'https://index.docker.io/v1/', 'registry-1.docker.io'];

function hostOfKey(key: string): string {
  return key.replace(/^https?:\/\//, '').replace(/\/.*$/, '');
}

/**
 * CRI auth entries from pull secrets whose registry matches the image (upstream builds a
 * keyring from `.dockerconfigjson` and `.dockercfg` secrets; matching here is by host and path
 * prefix).
 */
export function pullSecretsToAuth(image: string, secrets: readonly Secret[]): PartialMessage<AuthConfig>[] {
  const ref = parseImageReference(image);
  if (!ref) return [];
  const target = `${ref.domain}/${ref.path}`;
  const out: PartialMessage<AuthConfig>[] = [];
  for (const secret of secrets) {
    const data = secret.data ?? {};
    let auths: Record<string, Record<string, string>> = {};
    try {
      if (data['.dockerconfigjson']) {
        auths = JSON.parse(Buffer.from(data['.dockerconfigjson'], 'base64').toString()).auths ?? {};
      } else if (data['.dockercfg']) {
        auths = JSON.parse(Buffer.from(data['.dockercfg'], 'base64').toString());
      }
    } catch {
      continue;
    }
    for (const [key, entry] of Object.entries(auths)) {
      const host = hostOfKey(key);
      const keyPath = key.replace(/^https?:\/\//, '');
      const hub = ref.domain === 'docker.io' && dockerHubKeys.some((k) => hostOfKey(k) === host);
      const prefix = keyPath.replace(/\/$/, '');
      const matches =
        host === ref.domain && (prefix === host || target === prefix || target.startsWith(`${prefix}/`));
      if (!hub && !matches) continue;
      let { username = '', password = '' } = entry;
      if (entry.auth && !username) {
        const decoded = Buffer.from(entry.auth, 'base64').toString();
        const sep = decoded.indexOf(':');
        if (sep > 0) {
          username = decoded.slice(0, sep);
          password = decoded.slice(sep + 1);
        }
      }
      out.push({
        username,
        password,
        serverAddress: host,
        identityToken: entry.identitytoken ?? '',
        registryToken: entry.registrytoken ?? '',
      });
    }
  }
  return out;
}

/** Options of {@link ImageManager}. */
export interface ImageManagerOptions {
  readonly imageService: ImageService;
  readonly clock: Clock;
  readonly recorder: EventRecorder;
  readonly logger: Logger;
  /**
   * Pulls at once; 1 (the default) pulls serially, as upstream's `serializeImagePulls`; Infinity
   * does not limit (serializeImagePulls false without maxParallelImagePulls).
   */
  readonly maxParallelImagePulls?: number;
  readonly backOff?: Backoff;
  /**
   * Pulls started per second, as upstream's `registryPullQPS` (token bucket through the clock);
   * 0 or unset does not limit. A pull over the limit fails with `pull QPS exceeded`.
   */
  readonly registryPullQPS?: number;
  /** Pulls allowed in a burst with {@link ImageManagerOptions.registryPullQPS} (upstream `registryBurst`). */
  readonly registryBurst?: number;
  /**
   * How long an image found present is taken as present without asking the runtime again, ms;
   * default {@link DefaultPresentImageTtlMs}, 0 asks every time (upstream asks on every start).
   */
  readonly presentImageTtlMs?: number;
}

/**
 * Default of {@link ImageManagerOptions.presentImageTtlMs}: a burst of pods on one image asks
 * the runtime about it about once a second rather than once per container.
 */
export const DefaultPresentImageTtlMs = 1_000;

/** What {@link ImageManager.ensureImageExists} needs. */
export interface EnsureImageOptions {
  readonly pod: Pod;
  readonly container: Container;
  readonly pullSecrets: readonly Secret[];
  readonly sandboxConfig?: PartialMessage<PodSandboxConfig>;
  readonly objectRef: EventObjectRef;
  readonly signal?: AbortSignal;
}

/** The image ensured: its ID, and the runtime's user for it (for runAsNonRoot). */
export interface EnsuredImage {
  readonly imageRef: string;
  /** Bytes, as the runtime reports them (0 when unknown). */
  readonly size: number;
  readonly uid?: number;
  readonly username: string;
}

/** Ensures images exist under their pull policy, with a per pod+image backoff (upstream `imageManager`). */
export class ImageManager {
  readonly #svc: ImageService;
  readonly #clock: Clock;
  readonly #recorder: EventRecorder;
  readonly #logger: Logger;
  readonly #queue: PQueue;
  readonly #presentTtlMs: number;
  /** Images found present, by name, until when that answer is reused (only present ones). */
  readonly #present = new Map<string, { readonly image: EnsuredImage; readonly until: number }>();
  /** The pull backoff, keyed `<podUID>_<image>`. */
  readonly backOff: Backoff;
  /** Upstream's `throttleImagePulling`; undefined without a QPS. */
  readonly #pullLimiter: TokenBucket | undefined;

  constructor(options: ImageManagerOptions) {
    this.#svc = options.imageService;
    this.#clock = options.clock;
    this.#recorder = options.recorder;
    this.#logger = options.logger;
    this.#queue = new PQueue({ concurrency: Math.max(1, options.maxParallelImagePulls ?? 1) });
    this.#presentTtlMs = Math.max(0, options.presentImageTtlMs ?? DefaultPresentImageTtlMs);
    const qps = options.registryPullQPS ?? 0;
    this.#pullLimiter =
      qps > 0 ? new TokenBucket(options.clock, qps, Math.max(1, options.registryBurst ?? 10)) : undefined;
    this.backOff =
      options.backOff ??
      new Backoff({ clock: options.clock, initialMs: imageBackOffInitialMs, maxMs: imageBackOffMaxMs });
  }

  /** Pulls waiting or running. */
  get pendingPulls(): number {
    return this.#queue.size + this.#queue.pending;
  }

  /**
   * Forgets that an image was present (a container could not be created from it), so the next
   * start asks the runtime again. `image` as the container names it.
   */
  forgetImage(image: string): void {
    try {
      this.#present.delete(applyDefaultImageTag(image));
    } catch {
      // An invalid name was never remembered.
    }
  }

  /** The runtime's answer for the image, or a recent one that it is present (unless `fresh`). */
  async #inspect(image: string, signal?: AbortSignal, fresh = false): Promise<EnsuredImage | undefined> {
    const now = this.#clock.now();
    const known = fresh ? undefined : this.#present.get(image);
    if (known && known.until > now) return known.image;
    const res = await this.#svc.imageStatus({ image: { image } }, { signal });
    if (!res.image?.id) {
      this.#present.delete(image);
      return undefined;
    }
    const found: EnsuredImage = {
      imageRef: res.image.id,
      size: res.image.size,
      username: res.image.username,
      ...(res.image.uid ? { uid: res.image.uid.value } : {}),
    };
    if (this.#presentTtlMs > 0) {
      if (this.#present.size >= 1000) {
        for (const [name, entry] of this.#present) if (entry.until <= now) this.#present.delete(name);
      }
      this.#present.set(image, { image: found, until: this.#clock.now() + this.#presentTtlMs });
    }
    return found;
  }

  /** Upstream `EnsureImageExists`; throws {@link KubeRuntimeError} with upstream's reasons. */
  async ensureImageExists(o: EnsureImageOptions): Promise<EnsuredImage> {
    const { container, objectRef: ref } = o;
    const requested = container.image ?? '';
    let image: string;
    try {
      image = applyDefaultImageTag(requested);
    } catch (err) {
      const msg = `Failed to apply default image tag "${requested}": ${errorMessage(err)}`;
      this.#recorder.event(ref, 'Warning', 'InspectFailed', msg);
      throw new KubeRuntimeError('InvalidImageName', msg);
    }
    let present: EnsuredImage | undefined;
    try {
      present = await this.#inspect(image, o.signal);
    } catch (err) {
      const msg = `Failed to inspect image "${requested}": ${errorMessage(err)}`;
      this.#recorder.event(ref, 'Warning', 'InspectFailed', msg);
      throw new KubeRuntimeError('ImageInspectError', msg, { cause: err });
    }
    const policy = pullPolicyOf(container);
    if (!shouldPullImage(policy, present !== undefined)) {
      if (present) {
        this.#recorder.event(
          ref,
          'Normal',
          'Pulled',
          `Container image "${requested}" already present on machine`,
        );
        return present;
      }
      const msg = `Container image "${requested}" is not present with pull policy of Never`;
      this.#recorder.event(ref, 'Warning', 'ErrImageNeverPull', msg);
      throw new KubeRuntimeError('ErrImageNeverPull', msg);
    }
    const key = `${o.pod.metadata?.uid ?? ''}_${requested}`;
    if (this.backOff.isInBackOffSinceUpdate(key, this.#clock.now())) {
      const msg = `Back-off pulling image "${requested}"`;
      this.#recorder.event(ref, 'Normal', 'BackOff', msg);
      throw new KubeRuntimeError('ImagePullBackOff', msg);
    }
    this.#recorder.event(ref, 'Normal', 'Pulling', `Pulling image "${requested}"`);
    const queued = this.#clock.now();
    let started = queued;
    try {
      const pulled = await this.#queue.add(
        async () => {
          started = this.#clock.now();
          return this.#pull(image, o);
        },
        { signal: o.signal },
      );
      const now = this.#clock.now();
      this.#recorder.event(
        ref,
        'Normal',
        'Pulled',
        // Durations as Go prints them (`523ms`, `1.234s`, `1m1.5s`), as upstream's event.
        `Successfully pulled image "${requested}" in ${formatGoDuration(Math.trunc(now - started))} (${formatGoDuration(Math.trunc(now - queued))} including waiting). Image size: ${pulled.size} bytes.`,
      );
      this.backOff.gc();
      return pulled;
    } catch (err) {
      if (o.signal?.aborted) throw err;
      const msg = `Failed to pull image "${requested}": ${errorMessage(err)}`;
      this.#recorder.event(ref, 'Warning', 'Failed', msg);
      this.backOff.next(key, this.#clock.now());
      this.#logger.debug({ image: requested, err: errorMessage(err) }, 'image pull failed');
      throw new KubeRuntimeError('ErrImagePull', errorMessage(err), { cause: err });
    }
  }

  async #pull(image: string, o: EnsureImageOptions): Promise<EnsuredImage> {
    // One token per pull (all credentials tried count as one), as upstream's throttled service.
    if (this.#pullLimiter && !this.#pullLimiter.tryAccept()) throw new Error('pull QPS exceeded');
    const auths = pullSecretsToAuth(image, o.pullSecrets);
    const attempts: (PartialMessage<AuthConfig> | undefined)[] = auths.length > 0 ? auths : [undefined];
    let lastErr: unknown;
    // Each matching credential is tried in turn, as upstream's keyring lookups.
    for (const auth of attempts) {
      try {
        const res = await this.#svc.pullImage(
          {
            image: { image },
            ...(auth ? { auth } : {}),
            ...(o.sandboxConfig ? { sandboxConfig: o.sandboxConfig } : {}),
          },
          { signal: o.signal },
        );
        // A pull may have moved the tag: the answer from before it is stale.
        this.#present.delete(image);
        const inspected = await this.#inspect(res.imageRef || image, o.signal, true).catch(() => undefined);
        return inspected ?? { imageRef: res.imageRef, size: 0, username: '' };
      } catch (err) {
        lastErr = err;
        if (o.signal?.aborted) break;
      }
    }
    throw lastErr;
  }
}

/**
 * A token bucket (client-go's `NewTokenBucketRateLimiter`, non-blocking use): `burst` tokens,
 * refilled at `qps` a second through the injected clock; it starts full.
 */
export class TokenBucket {
  readonly #clock: Clock;
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #last: number;

  constructor(clock: Clock, qps: number, burst: number) {
    this.#clock = clock;
    this.#qps = qps;
    this.#burst = burst;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  /** Takes a token when one is there. */
  tryAccept(): boolean {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (Math.max(0, now - this.#last) * this.#qps) / 1000);
    this.#last = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
