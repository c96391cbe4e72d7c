// Unknown-field detection (the `fieldValidation` query of the real server): walks an object
// along the attribute maps of @kubernetes/client-node's generated models, which carry every
// declared field of every built-in type.
import * as models from '@kubernetes/client-node';
import type { Json } from './patch.js';
import type { ResourceInfo } from './resources.js';

interface Attribute {
  readonly baseName: string;
  readonly type: string;
}

type Model = { getAttributeTypeMap?: () => Attribute[] };

const registry = models as unknown as Record<string, Model | undefined>;

/** The client-node model class name of a resource's kind (`V1Pod`, `CoreV1Event`). */
function modelName(info: ResourceInfo): string {
  if (info.group === '' && info.kind === 'Event') return 'CoreV1Event';
  return `V1${info.kind}`;
}

function walk(type: string, value: Json | undefined, path: string, out: string[]): void {
  if (value === undefined || value === null) return;
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(arr[1] as string, v, `${path}[${i}]`, out);
    }
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) walk(map[1] as string, v, `${path}[${k}]`, out);
    }
    return;
  }
  const attrs = registry[type]?.getAttributeTypeMap?.();
  if (!attrs || typeof value !== 'object' || Array.isArray(value)) return;
  for (const [k, v] of Object.entries(value)) {
    const a = attrs.find((x) => x.baseName === k);
    const p = path ? `${path}.${k}` : k;
    if (!a) out.push(p);
    else walk(a.type, v, p, out);
  }
}

/** The paths of fields of `obj` its schema does not declare, as upstream names them. @internal */
export function unknownFields(info: ResourceInfo, obj: Json): string[] {
  const out: string[] = [];
  walk(modelName(info), obj, '', out);
  return out;
}
