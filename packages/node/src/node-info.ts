import { goArch, goOS, type Pod, type Toleration } from '@kubelet-kit/core';
import { defaultNodeLabels } from '@kubelet-kit/nodestatus';

/**
 * A node taint (upstream `v1.Taint`).
 *
 * @public
 */
export interface NodeTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/**
 * What admission knows of this node, as its Node object would carry it: name, labels (the
 * defaults plus `--node-labels`) and taints (`--register-with-taints`). Node registration can
 * reuse it as the object's metadata and spec.
 *
 * @public
 */
export interface NodeInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly NodeTaint[];
}

/** Go's `runtime.GOOS` and `runtime.GOARCH` of this process. */
export const nodeOS: string = goOS();
export const nodeArch: string = goArch();

/**
 * The labels upstream's kubelet gives its Node (`initialNode`): hostname, os and arch, stable and
 * beta; `extra` (`--node-labels`) is laid over them.
 */
export function nodeLabels(
  hostname: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    'kubernetes.io/hostname': hostname,
    'kubernetes.io/os': nodeOS,
    'kubernetes.io/arch': nodeArch,
    'beta.kubernetes.io/os': nodeOS,
    'beta.kubernetes.io/arch': nodeArch,
    ...extra,
  };
}

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const qualifiedNamePart = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Why `key` is not a qualified name (upstream `IsQualifiedName`), undefined when it is. */
function qualifiedNameError(key: string): string | undefined {
  const parts = key.split('/');
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length > 2) return 'a qualified name must have at most one "/"';
  if (parts.length === 2 && (parts[0]!.length > 253 || !dns1123Subdomain.test(parts[0]!))) {
    return 'prefix part must be a lowercase RFC 1123 subdomain';
  }
  if (name.length === 0 || name.length > 63 || !qualifiedNamePart.test(name)) {
    return "name part must be at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
  }
  return undefined;
}

/** Why `value` is not a label value (upstream `IsValidLabelValue`), undefined when it is. */
function labelValueError(value: string): string | undefined {
  if (value === '') return undefined;
  return value.length <= 63 && qualifiedNamePart.test(value)
    ? undefined
    : "a label value must be empty or at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
}

/** The `kubernetes.io` and `k8s.io` labels a kubelet may set on itself (upstream `KubeletLabels`). */
const kubeletLabels = new Set(defaultNodeLabels);
const kubeletLabelNamespaces = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

function isRestrictedKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash === -1) return false;
  const ns = key.slice(0, slash);
  const k8s = (d: string) => ns === d || ns.endsWith(`.${d}`);
  if (!k8s('kubernetes.io') && !k8s('k8s.io')) return false;
  if (kubeletLabels.has(key)) return false;
  return !kubeletLabelNamespaces.some((d) => ns === d || ns.endsWith(`.${d}`));
}

/**
 * `--node-labels k=v,k2=v2` (upstream's `MapStringString` flag and its node-labels checks):
 * keys are qualified names, values label values, and only the kubelet's own `kubernetes.io` /
 * `k8s.io` labels may be given.
 */
export function parseNodeLabels(spec: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of spec.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq === -1) throw new Error(`malformed pair, expect string=string: ${JSON.stringify(item)}`);
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    const keyErr = qualifiedNameError(key);
    if (keyErr) throw new Error(`invalid node label key ${JSON.stringify(key)}: ${keyErr}`);
    const valueErr = labelValueError(value);
    if (valueErr) throw new Error(`invalid node label value ${JSON.stringify(value)}: ${valueErr}`);
    labels[key] = value;
  }
  const restricted = Object.keys(labels).filter(isRestrictedKey).sort();
  if (restricted.length) {
    throw new Error(
      `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: ${JSON.stringify(restricted)}`,
    );
  }
  return labels;
}

const taintEffects = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

/** `--register-with-taints key=value:Effect,key2:Effect` (upstream `ParseTaints`). */
export function parseTaints(spec: string): NodeTaint[] {
  const taints: NodeTaint[] = [];
  for (const item of spec.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const parts = item.split(':');
    if (parts.length !== 2 || parts[0] === '') throw new Error(`invalid taint spec: ${item}`);
    const effect = parts[1]!;
    if (!taintEffects.has(effect)) {
      throw new Error(`invalid taint effect: ${effect}, unsupported taint effect`);
    }
    const kv = parts[0]!.split('=');
    if (kv.length > 2) throw new Error(`invalid taint spec: ${item}`);
    const key = kv[0]!;
    const value = kv[1] ?? '';
    const keyErr = qualifiedNameError(key);
    if (keyErr) throw new Error(`invalid taint spec: ${item}, ${keyErr}`);
    const valueErr = labelValueError(value);
    if (valueErr) throw new Error(`invalid taint spec: ${item}, ${valueErr}`);
    if (taints.some((t) => t.key === key && t.effect === effect)) {
      throw new Error(`duplicated taints with the same key and effect: ${item}`);
    }
    taints.push({ key, ...(value !== '' ? { value } : {}), effect: effect as NodeTaint['effect'] });
  }
  return taints;
}

/** Upstream `Toleration.ToleratesTaint`. */
export function toleratesTaint(toleration: Toleration, taint: NodeTaint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? '') {
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** Upstream `FindMatchingUntoleratedTaint`: the first taint passing `filter` that no toleration tolerates. */
export function findUntoleratedTaint(
  taints: readonly NodeTaint[],
  tolerations: readonly Toleration[],
  filter: (t: NodeTaint) => boolean,
): NodeTaint | undefined {
  return taints.find((t) => filter(t) && !tolerations.some((tol) => toleratesTaint(tol, t)));
}

interface SelectorRequirement {
  readonly key: string;
  readonly operator: string;
  readonly values?: readonly string[];
}

/** Parses a Go `strconv.ParseInt` integer; undefined when `s` is not one. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

/**
 * One `matchExpressions` requirement against the labels; undefined when the requirement is
 * malformed (upstream's selector parse error: the whole term then matches nothing).
 */
function labelRequirementMatches(
  r: SelectorRequirement,
  labels: Readonly<Record<string, string>>,
): boolean | undefined {
  if (qualifiedNameError(r.key) !== undefined) return undefined;
  const values = r.values ?? [];
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.operator) {
    case 'In':
      if (values.length === 0) return undefined;
      return has && values.includes(value!);
    case 'NotIn':
      if (values.length === 0) return undefined;
      return !has || !values.includes(value!);
    case 'Exists':
      if (values.length !== 0) return undefined;
      return has;
    case 'DoesNotExist':
      if (values.length !== 0) return undefined;
      return !has;
    case 'Gt':
    case 'Lt': {
      if (values.length !== 1) return undefined;
      const bound = parseInt64(values[0]!);
      if (bound === undefined) return undefined;
      if (!has) return false;
      const n = parseInt64(value!);
      if (n === undefined) return false;
      return r.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return undefined;
  }
}

/** One `matchFields` requirement: only `metadata.name`, with In or NotIn and one value. */
function fieldRequirementMatches(r: SelectorRequirement, nodeName: string): boolean | undefined {
  if (r.key !== 'metadata.name') return undefined;
  const values = r.values ?? [];
  if ((r.operator !== 'In' && r.operator !== 'NotIn') || values.length !== 1) return undefined;
  return r.operator === 'In' ? values[0] === nodeName : values[0] !== nodeName;
}

interface SelectorTerm {
  readonly matchExpressions?: readonly SelectorRequirement[];
  readonly matchFields?: readonly SelectorRequirement[];
}

/** A term matches when all its requirements do; an empty or malformed term matches nothing. */
function termMatches(term: SelectorTerm, node: NodeInfo): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const results = [
    ...exprs.map((r) => labelRequirementMatches(r, node.labels)),
    ...fields.map((r) => fieldRequirementMatches(r, node.name)),
  ];
  // A parse error anywhere in the term drops the term, whatever the other requirements say.
  if (results.includes(undefined)) return false;
  return results.every((m) => m === true);
}

/**
 * Upstream `GetRequiredNodeAffinity(pod).Match(node)`: every `nodeSelector` label equal, and,
 * when given, one of the required node affinity's terms matching.
 */
export function podMatchesNodeAffinity(pod: Pod, node: NodeInfo): boolean {
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (!Object.hasOwn(node.labels, k) || node.labels[k] !== v) return false;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined) return true;
  return (required.nodeSelectorTerms ?? []).some((t) => termMatches(t, node));
}
