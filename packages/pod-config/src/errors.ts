import { type EventRecorder, podEventReference } from '@kubelet-kit/core';

/**
 * One problem with one field (upstream `field.Error`).
 *
 * @public
 */
export interface FieldError {
  /** The field path, e.g. `spec.containers[0].image`; `<document>` when the bytes did not parse. */
  readonly field: string;
  /** Upstream's error type: `Required value`, `Invalid value`, `Duplicate value`, `Not found`, `Unsupported value`, `Forbidden`. */
  readonly type: string;
  readonly detail: string;
}

/**
 * Where a rejected pod came from.
 *
 * @public
 */
export interface PodOrigin {
  /** The source name: `file`, `http`, `api`, `static`, … */
  readonly source: string;
  /** The manifest file, for file sources. */
  readonly file?: string;
  /** The manifest URL, for http sources. */
  readonly url?: string;
}

/**
 * The pod a rejection is about, as far as it could be read.
 *
 * @public
 */
export interface PodObjectRef {
  readonly namespace?: string;
  readonly name?: string;
}

function describe(
  origin: PodOrigin,
  object: PodObjectRef | undefined,
  errors: readonly FieldError[],
): string {
  const where = [`source ${JSON.stringify(origin.source)}`];
  if (origin.file !== undefined) where.push(`file ${JSON.stringify(origin.file)}`);
  if (origin.url !== undefined) where.push(`url ${JSON.stringify(origin.url)}`);
  const pod = object?.name ? `${object.namespace ?? ''}/${object.name}` : '<unnamed>';
  where.push(`pod ${JSON.stringify(pod)}`);
  const fields = errors.map((e) => `${e.field}: ${e.type}: ${e.detail}`).join('; ');
  return `invalid pod (${where.join(', ')}): ${fields}`;
}

/**
 * A pod rejected before it entered the stream: bytes that are not a pod, a pod that fails
 * validation, or a static pod that references API objects. The message names the source, the
 * file or URL, the pod and every field.
 *
 * @public
 */
export class PodValidationError extends Error {
  /** Upstream's event reason for pods rejected by the kubelet. */
  readonly code = 'FailedValidation';
  readonly source: string;
  readonly file: string | undefined;
  readonly url: string | undefined;
  readonly object: PodObjectRef;
  /** The first failing field; all of them are in {@link PodValidationError.errors}. */
  readonly field: string;
  readonly errors: readonly FieldError[];

  constructor(origin: PodOrigin, object: PodObjectRef | undefined, errors: readonly FieldError[]) {
    const all =
      errors.length > 0 ? errors : [{ field: '<document>', type: 'Invalid value', detail: 'rejected' }];
    super(describe(origin, object, all));
    this.name = 'PodValidationError';
    this.source = origin.source;
    this.file = origin.file;
    this.url = origin.url;
    this.object = { ...object };
    this.field = all[0]?.field ?? '<document>';
    this.errors = all;
  }
}

/** Records the `FailedValidation` warning event of a rejected pod. */
export function recordValidationFailure(recorder: EventRecorder, error: PodValidationError): void {
  recorder.event(podEventReference({ metadata: error.object }), 'Warning', error.code, error.message);
}

/**
 * An error of a source as a whole (an unreadable directory, an HTTP failure), not of one pod.
 *
 * @public
 */
export class PodSourceError extends Error {
  readonly code: string;
  readonly source: string;
  readonly target: string;

  constructor(source: string, target: string, code: string, message: string, options?: { cause?: unknown }) {
    super(`${source} source ${JSON.stringify(target)}: ${message}`, options);
    this.name = 'PodSourceError';
    this.code = code;
    this.source = source;
    this.target = target;
  }
}
