// Status objects shaped as the real API server shapes them (apimachinery's
// pkg/api/errors: NewNotFound, NewAlreadyExists, NewConflict, NewInvalid, …).
import { qualifiedName, type ResourceInfo } from './resources.js';

/** A `kind: Status` failure and its HTTP code. @internal */
export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

function details(info: ResourceInfo, name: string): Record<string, unknown> {
  return { name, ...(info.group ? { group: info.group } : {}), kind: info.plural };
}

/** @internal */
export function notFound(info: ResourceInfo, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${qualifiedName(info)} "${name}" not found`, details(info, name));
}

/** @internal */
export function alreadyExists(info: ResourceInfo, name: string): StatusError {
  return new StatusError(
    409,
    'AlreadyExists',
    `${qualifiedName(info)} "${name}" already exists`,
    details(info, name),
  );
}

/** The optimistic-concurrency conflict (upstream's OptimisticLockErrorMsg). @internal */
export function conflict(info: ResourceInfo, name: string, why?: string): StatusError {
  return new StatusError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedName(info)} "${name}": ${
      why ?? 'the object has been modified; please apply your changes to the latest version and try again'
    }`,
    details(info, name),
  );
}

/** One field error of an Invalid status. @internal */
export interface FieldCause {
  readonly reason: string;
  readonly message: string;
  readonly field: string;
}

/** 422 Invalid: the details name the Kind, not the resource, as upstream's NewInvalid does. @internal */
export function invalid(info: ResourceInfo, name: string, causes: readonly FieldCause[]): StatusError {
  const list = causes.map((c) => `${c.field}: ${c.message}`);
  const summary = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
  return new StatusError(422, 'Invalid', `${info.kind} "${name}" is invalid: ${summary}`, {
    name,
    ...(info.group ? { group: info.group } : {}),
    kind: info.kind,
    causes,
  });
}

/** @internal */
export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message);
}

/** @internal */
export function methodNotAllowed(): StatusError {
  return new StatusError(
    405,
    'MethodNotAllowed',
    'the server does not allow this method on the requested resource',
  );
}

/** The answer to an unknown path (upstream answers it with a 404 Status, reason NotFound). @internal */
export function pathNotFound(): StatusError {
  return new StatusError(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** The error event a watch from a compacted resourceVersion gets (upstream NewResourceExpired). @internal */
export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message);
}

/** @internal */
export function gone(message: string): StatusError {
  return new StatusError(410, 'Gone', message);
}

/** @internal */
export function unsupportedMediaType(type: string): StatusError {
  return new StatusError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got ${type})`,
  );
}

/** @internal */
export function serviceUnavailable(): StatusError {
  return new StatusError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
}
