// Decoding and defaulting of static pod manifests, shared by the file, http and programmatic
// sources (upstream `pkg/kubelet/config/common.go`).

import type { Pod, Toleration } from '@kubelet-kit/core';
import { ConfigHashAnnotationKey } from '@kubelet-kit/core';
import type YAML from 'yaml';
import { apiObjectReference } from './api-references.js';
import { setPodDefaults } from './defaults.js';
import { type FieldError, type PodObjectRef, type PodOrigin, PodValidationError } from './errors.js';
import { canonicalJSON, Fnv128a } from './hash.js';
import { yaml } from './load-yaml.js';
import { writable } from './mutable.js';
import { podFieldErrors, validatePodSchema } from './validation.js';

/**
 * The manifest size limit of a file or URL: 10 MiB (upstream `maxConfigLength`). A manifest must be
 * smaller: upstream reads with `ReadAtMost`, which errs once it has read the limit.
 *
 * @public
 */
export const maxConfigLength = 10 * 1024 * 1024;

/**
 * The deepest nesting of objects and arrays a manifest may have. Upstream's decoders stop at
 * 10 000 levels; the YAML composer here recurses per level and overflows the stack near 1 000,
 * and a second overflow in the same process can take V8 down (a fatal RegExpCompiler OOM, found
 * by fuzzing), so nesting is measured without recursion and refused well before that. The deepest
 * pod field is about 10 levels down.
 *
 * @public
 */
export const maxManifestDepth = 256;

/**
 * `<name>-<lowercase node name>`: unique across nodes (upstream `generatePodName`).
 *
 * @public
 */
export function generatePodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

/**
 * What static pod defaulting needs to know about where a pod came from.
 *
 * @public
 */
export interface StaticPodOrigin {
  readonly nodeName: string;
  /**
   * `file` pods hash `host:<node>` and `file:<path>` into their UID and tolerate NoExecute
   * taints; `url` pods hash `url:<url>`.
   */
  readonly kind: 'file' | 'url';
  /** The manifest path (kind `file`) or URL (kind `url`). */
  readonly location: string;
}

function sameToleration(a: Toleration, b: Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    (a.operator ?? 'Equal') === (b.operator ?? 'Equal') &&
    (a.value ?? '') === (b.value ?? '')
  );
}

/**
 * The UID of a static pod that sets none: hex FNV-128a over the pod, then `host:<node>` and
 * `file:<path>` (file pods) or `url:<url>`. The pod part is a canonical JSON form, not Go's
 * DeepHashObject bytes, so UIDs are stable but differ from the upstream kubelet's.
 *
 * @public
 */
export function staticPodUID(pod: Pod, origin: StaticPodOrigin): string {
  const hasher = new Fnv128a().write(canonicalJSON(pod));
  if (origin.kind === 'file') {
    hasher.write(`host:${origin.nodeName}`);
    hasher.write(`file:${origin.location}`);
  } else {
    hasher.write(`url:${origin.location}`);
  }
  return hasher.hex();
}

/**
 * Defaults a static pod in place as the kubelet does (upstream `applyDefaults`, after the API
 * defaults its decoder applies): UID (unless set), name suffix, namespace, node name, the
 * config.hash annotation, the NoExecute toleration for file pods, phase Pending.
 *
 * @public
 */
export function applyStaticPodDefaults(pod: Pod, origin: StaticPodOrigin): Pod {
  setPodDefaults(pod);
  pod.metadata ??= {};
  const meta = writable(pod.metadata);
  if (!meta.uid) meta.uid = staticPodUID(pod, origin);
  meta.name = generatePodName(meta.name ?? '', origin.nodeName);
  if (!meta.namespace) meta.namespace = 'default';
  const spec = pod.spec ?? { containers: [] };
  pod.spec = spec;
  spec.nodeName = origin.nodeName;
  meta.annotations = { ...(meta.annotations ?? {}), [ConfigHashAnnotationKey]: meta.uid };
  if (origin.kind === 'file') {
    // Static pods must survive node problems (NoExecute taints).
    const toleration: Toleration = { operator: 'Exists', effect: 'NoExecute' };
    const tolerations = spec.tolerations ?? [];
    const at = tolerations.findIndex((t) => sameToleration(t, toleration));
    if (at >= 0) tolerations[at] = toleration;
    else tolerations.push(toleration);
    spec.tolerations = tolerations;
  }
  writable(pod).status = { ...(pod.status ?? {}), phase: 'Pending' };
  return pod;
}

/**
 * Options of {@link decodeStaticPods}.
 *
 * @public
 */
export interface DecodeStaticPodOptions {
  readonly nodeName: string;
  /** The source name the pods are reported under (`file`, `http`, …). */
  readonly source: string;
  /** The manifest file; makes the pods file pods. */
  readonly file?: string;
  /** The manifest URL; makes the pods url pods. */
  readonly url?: string;
  /** Accept a PodList as well as a Pod (http sources). Default false. */
  readonly allowList?: boolean;
  /**
   * Reject static pods that reference API objects (secrets, configMaps, service accounts, PVCs,
   * …), as upstream's PreventStaticPodAPIReferences gate does. Default true; an embedder that
   * supplies those objects itself may turn it off (ClusterTrustBundles and ResourceClaims stay
   * rejected, as upstream without the gate).
   */
  readonly preventStaticPodAPIReferences?: boolean;
}

const yamlOptions = {
  version: '1.1',
  // sigs.k8s.io/yaml keeps unquoted dates as strings; so do we.
  customTags: (tags: YAML.Tags) =>
    tags.filter((t) => (t as { tag?: string }).tag !== 'tag:yaml.org,2002:timestamp'),
} as const;

function documentError(
  origin: PodOrigin,
  detail: string,
  field = '<document>',
  object?: PodObjectRef,
): PodValidationError {
  return new PodValidationError(origin, object, [{ field, type: 'Invalid value', detail }]);
}

/**
 * Parses a manifest: JSON, or YAML with YAML 1.1 rules (as sigs.k8s.io/yaml: `0644` is octal,
 * `yes` is true). One document only.
 *
 * @public
 */
export function parseManifest(data: string | Uint8Array, origin: PodOrigin): unknown {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
  if (size >= maxConfigLength)
    throw documentError(origin, `manifest is ${size} bytes, not under the ${maxConfigLength}-byte limit`);
  const text =
    typeof data === 'string'
      ? data
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
  if (text.trim() === '') throw documentError(origin, 'manifest is empty');
  if (text.trimStart().startsWith('{')) {
    let value: unknown;
    let parsed = false;
    try {
      value = JSON.parse(text) as unknown;
      parsed = true;
    } catch {
      // Not strict JSON; YAML may still read it (and reports a position if not).
    }
    if (parsed) {
      if (valueNesting(value) > maxManifestDepth) throw depthError(origin);
      return value;
    }
  }
  // The CST parser keeps its own stack; measure the nesting there before anything recurses.
  const cstDepth = yamlNesting(text);
  if (cstDepth > maxManifestDepth) throw depthError(origin);
  let doc: YAML.Document.Parsed;
  try {
    doc = yaml().parseDocument(text, yamlOptions);
  } catch (err) {
    throw documentError(origin, `cannot parse: ${(err as Error).message}`);
  }
  const first = doc.errors[0];
  if (first) {
    const pos = first.linePos?.[0];
    const at = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
    throw documentError(origin, `cannot parse${at}: ${first.code}: ${first.message.split('\n')[0]}`);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 }) as unknown;
  } catch (err) {
    throw documentError(origin, `cannot parse: ${(err as Error).message}`);
  }
  // Aliases can nest a value deeper than the text does.
  if (valueNesting(value) > maxManifestDepth) throw depthError(origin);
  return value;
}

function depthError(origin: PodOrigin): PodValidationError {
  return documentError(origin, `objects and arrays nested more than ${maxManifestDepth} levels deep`);
}

/** The nesting depth of a YAML text's collections, from the CST (no recursion). */
function yamlNesting(text: string): number {
  let max = 0;
  const stack: [YAML.CST.Token, number][] = [];
  for (const token of new (yaml().Parser)().parse(text)) stack.push([token, 0]);
  while (stack.length > 0) {
    const [token, depth] = stack.pop()!;
    if (depth > max) max = depth;
    if (max > maxManifestDepth) return max;
    if (token.type === 'document' && token.value) stack.push([token.value, depth]);
    if ('items' in token && Array.isArray(token.items)) {
      for (const item of token.items as { key?: YAML.CST.Token | null; value?: YAML.CST.Token }[]) {
        if (item.key) stack.push([item.key, depth + 1]);
        if (item.value) stack.push([item.value, depth + 1]);
      }
    }
  }
  return max;
}

/** The nesting depth of a parsed value (no recursion; shared references count each time). */
function valueNesting(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) max = depth + 1;
    if (max > maxManifestDepth) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return max;
}

function objectRefOf(value: unknown): PodObjectRef | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const meta = (value as { metadata?: unknown }).metadata;
  if (meta === null || typeof meta !== 'object') return undefined;
  const { name, namespace } = meta as { name?: unknown; namespace?: unknown };
  return {
    ...(typeof namespace === 'string' ? { namespace } : {}),
    ...(typeof name === 'string' ? { name } : {}),
  };
}

/**
 * The pod a static manifest rejected before defaulting will be, as far as it can be read: the
 * namespace `default` when it has none and the name with the node suffix, so that every rejection
 * of one file names the pod alike (validation errors come after defaulting).
 */
function staticObjectRefOf(value: unknown, nodeName: string): PodObjectRef | undefined {
  const meta = isRecord(value) ? value.metadata : undefined;
  if (meta !== undefined && meta !== null && !isRecord(meta)) return undefined;
  const { name, namespace } = (meta ?? {}) as { name?: unknown; namespace?: unknown };
  const ns = namespace === undefined || namespace === null || namespace === '' ? 'default' : namespace;
  return {
    ...(typeof ns === 'string' ? { namespace: ns } : {}),
    ...(typeof name === 'string' && name !== '' ? { name: generatePodName(name, nodeName) } : {}),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The rules a pod meets only when it is created (upstream `ValidatePodCreate`), which a static pod
 * always is; a pod already bound on the API server may carry these.
 */
function createOnlyErrors(pod: Pod): FieldError[] {
  const errors: FieldError[] = [];
  const spec = pod.spec;
  if ((spec?.ephemeralContainers ?? []).length > 0)
    errors.push({ field: 'spec.ephemeralContainers', type: 'Forbidden', detail: 'cannot be set on create' });
  // The static pod's nodeName is already set, so a scheduling gate could never be lifted.
  if (spec?.nodeName && (spec.schedulingGates ?? []).length > 0)
    errors.push({
      field: 'spec.nodeName',
      type: 'Forbidden',
      detail: 'cannot be set until all schedulingGates have been cleared',
    });
  return errors;
}

function decodeOnePod(raw: unknown, field: string, options: DecodeStaticPodOptions, origin: PodOrigin): Pod {
  const prefix = field === '' ? '' : `${field}.`;
  const fail = (errors: FieldError[], object = staticObjectRefOf(raw, options.nodeName)) =>
    new PodValidationError(
      origin,
      object,
      errors.map((e) => ({ ...e, field: e.field === '<root>' ? field || '<root>' : `${prefix}${e.field}` })),
    );
  if (!isRecord(raw))
    throw fail([{ field: '<root>', type: 'Invalid value', detail: 'a pod must be an object' }]);
  const meta = raw.metadata;
  if (!isRecord(meta) || typeof meta.name !== 'string' || meta.name === '') {
    throw fail([{ field: 'metadata.name', type: 'Required value', detail: 'name is needed for the pod' }]);
  }
  const schemaErrors = validatePodSchema({ ...raw, apiVersion: 'v1', kind: 'Pod' });
  if (schemaErrors.length > 0) throw fail(schemaErrors);
  // A null field is an absent one, as Go's decoding makes it (the schema lets optional fields be
  // null; lists with null items it already rejected).
  const pod = withoutNulls(raw) as Pod;
  pod.apiVersion = 'v1';
  pod.kind = 'Pod';
  const location = options.file ?? options.url ?? '';
  applyStaticPodDefaults(pod, {
    nodeName: options.nodeName,
    kind: options.file !== undefined ? 'file' : 'url',
    location,
  });
  const errors = [...podFieldErrors(pod), ...createOnlyErrors(pod)];
  if (errors.length > 0) throw fail(errors, objectRefOf(pod));
  const prevent = options.preventStaticPodAPIReferences ?? true;
  let reference = prevent ? apiObjectReference(pod) : undefined;
  if (!prevent) {
    // Without the gate upstream still rejects ClusterTrustBundle projections and ResourceClaims.
    for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
      const j = (v.projected?.sources ?? []).findIndex((s) => s.clusterTrustBundle);
      if (j >= 0) {
        reference = {
          resource: 'clustertrustbundles',
          field: `spec.volumes[${i}].projected.sources[${j}].clusterTrustBundle`,
        };
        break;
      }
    }
    if (!reference && (pod.spec?.resourceClaims ?? []).length > 0)
      reference = { resource: 'resourceclaims', field: 'spec.resourceClaims' };
  }
  if (reference !== undefined) {
    throw fail(
      [
        {
          field: reference.field,
          type: 'Forbidden',
          detail: `static pods may not reference ${reference.resource}`,
        },
      ],
      objectRefOf(pod),
    );
  }
  return pod;
}

/**
 * Decodes, defaults and validates a static pod manifest (upstream `tryDecodeSinglePod` and, with
 * `allowList`, `tryDecodePodList`). Returns the defaulted pods; throws a
 * {@link PodValidationError} naming the source, file or URL, pod and field. A PodList with one
 * bad pod is rejected whole, as upstream.
 *
 * @public
 */
export function decodeStaticPods(data: string | Uint8Array, options: DecodeStaticPodOptions): Pod[] {
  const origin: PodOrigin = {
    source: options.source,
    ...(options.file !== undefined ? { file: options.file } : {}),
    ...(options.url !== undefined ? { url: options.url } : {}),
  };
  const raw = parseManifest(data, origin);
  if (!isRecord(raw)) throw documentError(origin, 'manifest must hold one object', '<root>');
  const kind = raw.kind;
  // An object of another kind is named as written; a pod as the static pod it would have been.
  if (kind === undefined || kind === '')
    throw documentError(origin, "Object 'Kind' is missing", 'kind', objectRefOf(raw));
  if (kind !== 'Pod' && !(options.allowList && kind === 'PodList')) {
    const wanted = options.allowList ? 'Pod or PodList' : 'Pod';
    throw documentError(origin, `${JSON.stringify(kind)}: must be ${wanted}`, 'kind', objectRefOf(raw));
  }
  if (raw.apiVersion !== 'v1')
    throw documentError(
      origin,
      `${JSON.stringify(raw.apiVersion)}: must be v1`,
      'apiVersion',
      kind === 'Pod' ? staticObjectRefOf(raw, options.nodeName) : objectRefOf(raw),
    );
  if (kind === 'Pod') return [decodeOnePod(raw, '', options, origin)];
  const items = raw.items ?? [];
  if (!Array.isArray(items)) throw documentError(origin, 'must be a list of pods', 'items');
  return items.map((item, i) => decodeOnePod(item, `items[${i}]`, options, origin));
}

/** A deep copy without the object properties that are null. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = withoutNulls(v);
  return out;
}
