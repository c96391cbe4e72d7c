// Schema checks of written objects against the `kubernetes-models` package (an optional peer
// dependency: without it installed, objects are stored unchecked). Type errors answer 400
// BadRequest as the real server's decoder does; missing required fields 422 Invalid.
import type { JsonObject } from './patch.js';
import { apiVersionOf, type ResourceInfo } from './resources.js';
import { badRequest, type FieldCause, invalid, StatusError } from './status.js';

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: { missingProperty?: string; type?: string };
}

interface ModelClass {
  new (data: unknown): { validate(): void };
}

type Loader = (info: ResourceInfo) => Promise<ModelClass | undefined>;

/** Loads the kubernetes-models class of a resource, or undefined without the package. @internal */
export const loadModel: Loader = async (info) => {
  const specifier = `kubernetes-models/${apiVersionOf(info)}/${info.kind}`;
  try {
    const mod = (await import(specifier)) as Record<string, unknown>;
    const cls = mod[info.kind];
    return typeof cls === 'function' ? (cls as ModelClass) : undefined;
  } catch {
    return undefined;
  }
};

/** `/spec/containers/0/image` → `spec.containers[0].image`. @internal */
export function fieldPath(instancePath: string, extra?: string): string {
  let out = '';
  for (const part of instancePath.split('/').filter((p) => p !== '')) {
    out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  }
  if (extra) out = out === '' ? extra : `${out}.${extra}`;
  return out;
}

/** Checks `obj` against its schema; throws the Status the real server would answer. @internal */
export async function validateObject(
  info: ResourceInfo,
  obj: JsonObject,
  load: Loader = loadModel,
): Promise<void> {
  const meta = (obj.metadata ?? {}) as { name?: string };
  const name = meta.name ?? '';
  // The one semantic rule the schema misses that every client hits: a pod needs a container.
  const spec = obj.spec as { containers?: unknown[] } | undefined;
  if (
    info.group === '' &&
    info.kind === 'Pod' &&
    spec &&
    Array.isArray(spec.containers) &&
    spec.containers.length === 0
  ) {
    throw invalid(info, name, [
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers' },
    ]);
  }
  const Model = await load(info);
  if (!Model) return;
  try {
    new Model(obj).validate();
  } catch (e) {
    const errors = ((e as { errors?: AjvError[] }).errors ?? []) as AjvError[];
    if (errors.length === 0)
      throw badRequest(
        `${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: ${String(e)}`,
      );
    const typeError = errors.find((x) => x.keyword === 'type');
    if (typeError) {
      throw badRequest(
        `${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: json: cannot unmarshal into Go struct field ${fieldPath(typeError.instancePath ?? '')} of type ${typeError.params?.type ?? 'unknown'}`,
      );
    }
    const causes: FieldCause[] = errors.map((x) =>
      x.keyword === 'required'
        ? {
            reason: 'FieldValueRequired',
            message: 'Required value',
            field: fieldPath(x.instancePath ?? '', x.params?.missingProperty),
          }
        : {
            reason: 'FieldValueInvalid',
            message: `Invalid value: ${x.message ?? ''}`,
            field: fieldPath(x.instancePath ?? ''),
          },
    );
    throw invalid(info, name, causes);
  }
}

export { StatusError };
