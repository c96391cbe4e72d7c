// A programmatic source of static pods for embedders, in the spirit of k0s's static pod API
// (`ClaimStaticPod`, `SetManifest`, `Clear`, `Drop`): components claim a pod name, then set,
// clear or drop its manifest, and the kubelet sees a SET of every current manifest.
import {
  type EventRecorder,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  podEventReference,
} from '@kubelet-kit/core';
import { decodeStaticPods, parseManifest } from './common.js';
import { PodValidationError } from './errors.js';
import type { PodSource, PodSourceSink } from './source.js';
import { isDNS1123Label, isDNS1123Subdomain } from './validation.js';

/**
 * Options of {@link StaticPodSource}.
 *
 * @public
 */
export interface StaticPodSourceOptions {
  readonly nodeName: string;
  /** Source name; default `static`. Must differ from the other sources of the same PodConfig. */
  readonly name?: string;
  readonly logger?: Logger;
  /** Receives a `FailedValidation` warning per rejected manifest. */
  readonly recorder?: EventRecorder;
  /** See `DecodeStaticPodOptions.preventStaticPodAPIReferences`; default true. */
  readonly preventStaticPodAPIReferences?: boolean;
}

/**
 * One claimed static pod name (k0s `StaticPod`).
 *
 * @public
 */
export interface StaticPodHandle {
  readonly namespace: string;
  readonly name: string;
  /**
   * Sets the manifest (a Pod object, or its YAML or JSON text). It must be a Pod whose
   * namespace and name, if set, are the claimed ones. It is defaulted and validated like a file
   * pod; an invalid manifest throws a {@link PodValidationError} and the previous manifest stays.
   * Throws once the claim is dropped.
   */
  set(manifest: Pod | string | Uint8Array): void;
  /** Removes the pod but keeps the claim: a later `set` brings it back. */
  clear(): void;
  /** Removes the pod and releases the claim; the handle is then unusable and the name claimable again. */
  drop(): void;
}

interface Claim {
  readonly namespace: string;
  readonly name: string;
  pod: Pod | undefined;
  dropped: boolean;
}

/**
 * Static pods set from code. Pods are defaulted like URL pods of upstream's http source (k0s
 * serves its static pods to the kubelet through a manifest URL): UID from the pod and
 * `url:<source>:<namespace>/<name>`, name suffixed with the node name, no NoExecute toleration.
 * Every change sends a SET of all current pods (in claim order); the first SET, empty or not, is
 * sent at `start`.
 *
 * @public
 */
export class StaticPodSource implements PodSource {
  readonly name: string;
  readonly #options: StaticPodSourceOptions;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #claims = new Map<string, Claim>();
  #sink: PodSourceSink | undefined;
  #stopped = false;

  constructor(options: StaticPodSourceOptions) {
    this.#options = options;
    this.name = options.name ?? 'static';
    this.#logger = (options.logger ?? noopLogger).child({ source: this.name });
    this.#recorder = options.recorder ?? noopEventRecorder;
  }

  start(sink: PodSourceSink): void {
    if (this.#sink) throw new Error('StaticPodSource already started');
    this.#sink = sink;
    this.#publish();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
  }

  /** The current (defaulted) pods. */
  pods(): Pod[] {
    const pods: Pod[] = [];
    for (const c of this.#claims.values()) if (c.pod) pods.push(structuredClone(c.pod));
    return pods;
  }

  /** Claims `namespace/name`; throws if either is invalid or the name is already claimed. */
  claim(namespace: string, name: string): StaticPodHandle {
    if (!isDNS1123Label(namespace))
      throw new Error(`invalid namespace: ${JSON.stringify(namespace)}: must be a DNS-1123 label`);
    if (!isDNS1123Subdomain(name))
      throw new Error(`invalid name: ${JSON.stringify(name)}: must be a DNS-1123 subdomain`);
    const key = `${namespace}/${name}`;
    if (this.#claims.has(key)) throw new Error(`${key} is already claimed`);
    const claim: Claim = { namespace, name, pod: undefined, dropped: false };
    this.#claims.set(key, claim);
    return this.#handleOf(claim);
  }

  /**
   * Claims the manifest's `namespace/name` (namespace `default` when unset) unless this source
   * already holds that claim, then sets it. Returns the handle for `clear`/`drop`.
   */
  set(manifest: Pod): StaticPodHandle {
    const namespace = manifest.metadata?.namespace || 'default';
    const name = manifest.metadata?.name ?? '';
    const existing = this.#claims.get(`${namespace}/${name}`);
    const handle = existing ? this.#handleOf(existing) : this.claim(namespace, name);
    try {
      handle.set(manifest);
    } catch (err) {
      if (!existing) handle.drop();
      throw err;
    }
    return handle;
  }

  #handleOf(claim: Claim): StaticPodHandle {
    return {
      namespace: claim.namespace,
      name: claim.name,
      set: (manifest) => this.#set(claim, manifest),
      clear: () => {
        if (claim.dropped || claim.pod === undefined) return;
        claim.pod = undefined;
        this.#publish();
      },
      drop: () => {
        if (claim.dropped) return;
        claim.dropped = true;
        this.#claims.delete(`${claim.namespace}/${claim.name}`);
        if (claim.pod !== undefined) {
          claim.pod = undefined;
          this.#publish();
        }
      },
    };
  }

  #set(claim: Claim, manifest: Pod | string | Uint8Array): void {
    if (claim.dropped) throw new Error('already dropped');
    const location = `${this.name}:${claim.namespace}/${claim.name}`;
    const origin = { source: this.name, url: location };
    const object = { namespace: claim.namespace, name: claim.name };
    try {
      const raw: unknown =
        typeof manifest === 'string' || manifest instanceof Uint8Array
          ? parseManifest(manifest, origin)
          : structuredClone(manifest);
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
        throw new PodValidationError(origin, object, [
          { field: '<root>', type: 'Invalid value', detail: 'a pod must be an object' },
        ]);
      }
      const record = raw as Record<string, unknown>;
      const metaValue = record.metadata;
      const meta =
        metaValue !== null && typeof metaValue === 'object' && !Array.isArray(metaValue)
          ? (metaValue as Record<string, unknown>)
          : {};
      const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
      const nm = typeof meta.name === 'string' ? meta.name : '';
      if ((ns && ns !== claim.namespace) || (nm && nm !== claim.name)) {
        throw new PodValidationError(origin, object, [
          {
            field: 'metadata',
            type: 'Invalid value',
            detail: `attempt to set the manifest to ${JSON.stringify(`${ns}/${nm}`)}, whereas ${JSON.stringify(`${claim.namespace}/${claim.name}`)} was claimed`,
          },
        ]);
      }
      const [pod] = decodeStaticPods(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          ...record,
          metadata: { ...meta, namespace: claim.namespace, name: claim.name },
        }),
        {
          nodeName: this.#options.nodeName,
          source: this.name,
          url: location,
          ...(this.#options.preventStaticPodAPIReferences !== undefined
            ? { preventStaticPodAPIReferences: this.#options.preventStaticPodAPIReferences }
            : {}),
        },
      );
      claim.pod = pod;
    } catch (err) {
      if (err instanceof PodValidationError) {
        this.#logger.warn(
          { pod: `${claim.namespace}/${claim.name}`, field: err.field, err: err.message },
          'Rejected static pod manifest',
        );
        // The claim names the pod, whatever the manifest said.
        this.#recorder.event(podEventReference({ metadata: object }), 'Warning', err.code, err.message);
      }
      throw err;
    }
    this.#publish();
  }

  #publish(): void {
    if (!this.#sink || this.#stopped) return;
    const result = this.#sink({ op: 'SET', pods: this.pods(), source: this.name });
    if (result instanceof Promise) {
      result.catch((err: unknown) => this.#logger.error({ err }, 'StaticPodSource sink failed'));
    }
  }
}
