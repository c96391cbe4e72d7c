// Pod validation before a pod enters the stream: the node-relevant rules of upstream's
// `ValidatePodCreate` (`pkg/apis/core/validation/validation.go`). The structural part (types,
// required members, enums) comes from the Kubernetes OpenAPI schema via `kubernetes-models`;
// the rules a schema cannot say are written out below.

import { createRequire } from 'node:module';
import type {
  Container,
  IntOrString,
  LifecycleHandler,
  Pod,
  PodSpec,
  Probe,
  Volume,
} from '@kubelet-kit/core';
import { isValidQuantity, parseQuantity } from '@kubelet-kit/core';
import type { Pod as PodModelClass } from 'kubernetes-models/v1/Pod';
import { volumeSourcesOf } from './defaults.js';
import { type FieldError, type PodOrigin, PodValidationError } from './errors.js';

/**
 * The schema model, loaded when the first pod is validated, and through `require`: an agent
 * that has no pods yet does not carry it, and kubernetes-models' CommonJS build (the same
 * generated validators) costs an agent 3.5–4 MiB less RSS than its ES modules (about 120 of
 * them for a Pod), with the same heap.
 */
let podModel: typeof PodModelClass | undefined;
function loadPodModel(): typeof PodModelClass {
  podModel ??= (createRequire(import.meta.url)('kubernetes-models/v1/Pod') as { Pod: typeof PodModelClass })
    .Pod;
  return podModel;
}

const dns1123LabelRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123SubdomainRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const qualifiedNamePartRe = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const ianaSvcNameRe = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/**
 * A DNS-1123 label: lowercase alphanumerics and '-', at most 63 characters.
 *
 * @public
 */
export function isDNS1123Label(value: string): boolean {
  return value.length <= 63 && dns1123LabelRe.test(value);
}

/**
 * A DNS-1123 subdomain: dot-separated labels, at most 253 characters.
 *
 * @public
 */
export function isDNS1123Subdomain(value: string): boolean {
  return value.length <= 253 && dns1123SubdomainRe.test(value);
}

function isQualifiedName(value: string): boolean {
  const parts = value.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? parts[1] : parts[0];
  if (parts.length === 2 && !isDNS1123Subdomain(parts[0] ?? '')) return false;
  return name !== undefined && name.length <= 63 && qualifiedNamePartRe.test(name);
}

function isLabelValue(value: string): boolean {
  return value === '' || (value.length <= 63 && qualifiedNamePartRe.test(value));
}

function isIANASvcName(value: string): boolean {
  return value.length <= 15 && ianaSvcNameRe.test(value) && /[a-z]/.test(value) && !value.includes('--');
}

class Errors {
  readonly list: FieldError[] = [];
  required(field: string, detail = 'field is required'): void {
    this.list.push({ field, type: 'Required value', detail });
  }
  invalid(field: string, value: unknown, detail: string): void {
    this.list.push({ field, type: 'Invalid value', detail: `${JSON.stringify(value)}: ${detail}` });
  }
  duplicate(field: string, value: unknown): void {
    this.list.push({ field, type: 'Duplicate value', detail: JSON.stringify(value) });
  }
  notFound(field: string, value: unknown): void {
    this.list.push({ field, type: 'Not found', detail: JSON.stringify(value) });
  }
  unsupported(field: string, value: unknown, allowed: readonly string[]): void {
    this.list.push({
      field,
      type: 'Unsupported value',
      detail: `${JSON.stringify(value)}: supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
    });
  }
  forbidden(field: string, detail: string): void {
    this.list.push({ field, type: 'Forbidden', detail });
  }
}

/** `/spec/containers/0/image` → `spec.containers[0].image`. */
function jsonPointerToField(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out === '' ? '<root>' : out;
}

interface SchemaError {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: { missingProperty?: string; allowedValues?: unknown[] };
}

/**
 * The structural (OpenAPI schema) errors of a pod object.
 *
 * @public
 */
export function validatePodSchema(pod: unknown): FieldError[] {
  if (pod === null || typeof pod !== 'object' || Array.isArray(pod)) {
    return [{ field: '<root>', type: 'Invalid value', detail: 'a pod must be an object' }];
  }
  try {
    const PodModel = loadPodModel();
    new PodModel(pod as ConstructorParameters<typeof PodModel>[0]).validate();
    return [];
  } catch (err) {
    const raw = (err as { errors?: SchemaError[] }).errors;
    if (!Array.isArray(raw)) {
      return [{ field: '<root>', type: 'Invalid value', detail: String((err as Error).message ?? err) }];
    }
    // One field can fail several branches of a oneOf; report it once with every reason.
    const byField = new Map<string, { type: string; details: string[] }>();
    for (const e of raw) {
      let field = jsonPointerToField(e.instancePath ?? '');
      let type = 'Invalid value';
      if (e.keyword === 'required' && e.params?.missingProperty) {
        field = field === '<root>' ? e.params.missingProperty : `${field}.${e.params.missingProperty}`;
        type = 'Required value';
      } else if (e.keyword === 'enum') {
        type = 'Unsupported value';
      }
      let detail = e.message ?? 'invalid';
      if (e.keyword === 'enum' && e.params?.allowedValues) {
        detail = `supported values: ${e.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
      }
      const entry = byField.get(field);
      if (entry) {
        if (!entry.details.includes(detail)) entry.details.push(detail);
      } else {
        byField.set(field, { type, details: [detail] });
      }
    }
    return [...byField].map(([field, e]) => ({ field, type: e.type, detail: e.details.join(', ') }));
  }
}

const restartPolicies = ['Always', 'OnFailure', 'Never'] as const;
const dnsPolicies = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'] as const;
const pullPolicies = ['Always', 'Never', 'IfNotPresent'] as const;
const messagePolicies = ['File', 'FallbackToLogsOnError'] as const;
const protocols = ['TCP', 'UDP', 'SCTP'] as const;

function validatePortNumOrName(port: IntOrString | undefined, field: string, errs: Errors): void {
  if (port === undefined) {
    errs.required(field);
  } else if (typeof port === 'number') {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      errs.invalid(field, port, 'must be between 1 and 65535, inclusive');
  } else if (!isIANASvcName(port)) {
    errs.invalid(field, port, 'must be a valid port name (IANA_SVC_NAME)');
  }
}

function validateHandler(
  handler: LifecycleHandler | Probe,
  field: string,
  errs: Errors,
  kinds: readonly ('exec' | 'httpGet' | 'tcpSocket' | 'grpc' | 'sleep')[],
  gracePeriod?: number,
): void {
  const record = handler as Record<string, unknown>;
  const set = kinds.filter((k) => record[k] !== undefined && record[k] !== null);
  if (set.length === 0) {
    errs.required(field, 'must specify a handler type');
    return;
  }
  if (set.length > 1) {
    errs.forbidden(`${field}.${set[1]}`, 'may not specify more than 1 handler type');
    return;
  }
  if (handler.exec && (handler.exec.command ?? []).length === 0) errs.required(`${field}.exec.command`);
  if (handler.httpGet) validatePortNumOrName(handler.httpGet.port, `${field}.httpGet.port`, errs);
  if (handler.tcpSocket) validatePortNumOrName(handler.tcpSocket.port, `${field}.tcpSocket.port`, errs);
  if ('grpc' in handler && handler.grpc) {
    const port = handler.grpc.port;
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      errs.invalid(`${field}.grpc.port`, port, 'must be between 1 and 65535, inclusive');
  }
  if ('sleep' in handler && handler.sleep) {
    // The sleep runs inside the pod's grace period, so it may not outlast it (zero is allowed).
    const seconds = handler.sleep.seconds;
    if (!(seconds >= 0) || (gracePeriod !== undefined && seconds > gracePeriod))
      errs.invalid(
        `${field}.sleep`,
        seconds,
        `must be non-negative and less than terminationGracePeriodSeconds (${gracePeriod ?? 'unset'})`,
      );
  }
}

function validateProbe(
  probe: Probe | undefined,
  field: string,
  errs: Errors,
  successMustBeOne: boolean,
): void {
  if (!probe) return;
  validateHandler(probe, field, errs, ['exec', 'httpGet', 'tcpSocket', 'grpc']);
  for (const key of [
    'initialDelaySeconds',
    'timeoutSeconds',
    'periodSeconds',
    'successThreshold',
    'failureThreshold',
  ] as const) {
    const v = probe[key];
    if (v !== undefined && v < 0) errs.invalid(`${field}.${key}`, v, 'must be greater than or equal to 0');
  }
  if (probe.terminationGracePeriodSeconds !== undefined && probe.terminationGracePeriodSeconds <= 0) {
    errs.invalid(
      `${field}.terminationGracePeriodSeconds`,
      probe.terminationGracePeriodSeconds,
      'must be greater than 0',
    );
  }
  if (successMustBeOne && probe.successThreshold !== undefined && probe.successThreshold !== 1) {
    errs.invalid(`${field}.successThreshold`, probe.successThreshold, 'must be 1');
  }
}

function validateResources(c: Container, field: string, errs: Errors): void {
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  for (const [kind, list] of [
    ['limits', limits],
    ['requests', requests],
  ] as const) {
    for (const [name, q] of Object.entries(list)) {
      const f = `${field}.resources.${kind}[${JSON.stringify(name)}]`;
      if (!isQualifiedName(name)) errs.invalid(f, name, 'must be a standard resource name');
      if (!isValidQuantity(q)) errs.invalid(f, q, 'quantities must match the regular expression');
      else if (parseQuantity(q) < 0) errs.invalid(f, q, 'must be greater than or equal to 0');
    }
  }
  for (const [name, q] of Object.entries(requests)) {
    const limit = limits[name];
    if (limit === undefined || !isValidQuantity(q) || !isValidQuantity(limit)) continue;
    if (parseQuantity(q) > parseQuantity(limit)) {
      errs.invalid(
        `${field}.resources.requests[${JSON.stringify(name)}]`,
        q,
        `must be less than or equal to ${name} limit of ${limit}`,
      );
    }
  }
}

interface HostPortKey {
  readonly key: string;
}

function validateContainer(
  c: Container,
  field: string,
  errs: Errors,
  volumes: ReadonlySet<string>,
  hostNetwork: boolean,
  hostPorts: Set<HostPortKey['key']>,
  init: boolean,
  gracePeriod: number | undefined,
): void {
  if (!c.name) errs.required(`${field}.name`);
  else if (!isDNS1123Label(c.name)) errs.invalid(`${field}.name`, c.name, 'must be a DNS-1123 label');
  if (!c.image) errs.required(`${field}.image`);
  // Pods (unlike templates) may not pad the image with whitespace (validateContainersOnlyForPod).
  else if (c.image.trim() !== c.image)
    errs.invalid(`${field}.image`, c.image, 'must not have leading or trailing whitespace');
  if (
    c.imagePullPolicy !== undefined &&
    !pullPolicies.includes(c.imagePullPolicy as (typeof pullPolicies)[number])
  ) {
    errs.unsupported(`${field}.imagePullPolicy`, c.imagePullPolicy, pullPolicies);
  }
  if (
    c.terminationMessagePolicy !== undefined &&
    !messagePolicies.includes(c.terminationMessagePolicy as (typeof messagePolicies)[number])
  ) {
    errs.unsupported(`${field}.terminationMessagePolicy`, c.terminationMessagePolicy, messagePolicies);
  }
  const portNames = new Set<string>();
  (c.ports ?? []).forEach((p, i) => {
    const pf = `${field}.ports[${i}]`;
    if (p.name !== undefined && p.name !== '') {
      if (!isIANASvcName(p.name))
        errs.invalid(`${pf}.name`, p.name, 'must be a valid port name (IANA_SVC_NAME)');
      else if (portNames.has(p.name)) errs.duplicate(`${pf}.name`, p.name);
      portNames.add(p.name);
    }
    if (p.containerPort === undefined || p.containerPort === 0) errs.required(`${pf}.containerPort`);
    else if (p.containerPort < 1 || p.containerPort > 65535)
      errs.invalid(`${pf}.containerPort`, p.containerPort, 'must be between 1 and 65535, inclusive');
    if (p.hostPort !== undefined && p.hostPort !== 0) {
      if (p.hostPort < 1 || p.hostPort > 65535)
        errs.invalid(`${pf}.hostPort`, p.hostPort, 'must be between 1 and 65535, inclusive');
      const key = `${p.hostPort}/${p.protocol ?? 'TCP'}/${p.hostIP ?? ''}`;
      if (hostPorts.has(key)) errs.duplicate(`${pf}.hostPort`, key);
      hostPorts.add(key);
    }
    // Only the regular containers' set host ports must equal their ports (validatePodHostNetworkDeps;
    // defaulting has set an unset one already).
    if (hostNetwork && !init && p.hostPort && p.hostPort !== p.containerPort) {
      errs.invalid(`${pf}.hostPort`, p.hostPort, 'must match `containerPort` when `hostNetwork` is true');
    }
    if (p.protocol !== undefined && !protocols.includes(p.protocol as (typeof protocols)[number])) {
      errs.unsupported(`${pf}.protocol`, p.protocol, protocols);
    }
  });
  (c.env ?? []).forEach((e, i) => {
    // RelaxedEnvironmentVariableValidation (on by default in 1.34): printable ASCII but '='.
    if (!e.name) errs.required(`${field}.env[${i}].name`);
    else if (!/^[\x20-\x3c\x3e-\x7e]+$/.test(e.name))
      errs.invalid(
        `${field}.env[${i}].name`,
        e.name,
        "must consist of printable ASCII characters except '='",
      );
  });
  const mountPaths = new Set<string>();
  (c.volumeMounts ?? []).forEach((m, i) => {
    const mf = `${field}.volumeMounts[${i}]`;
    if (!m.name) errs.required(`${mf}.name`);
    else if (!volumes.has(m.name)) errs.notFound(`${mf}.name`, m.name);
    if (!m.mountPath) errs.required(`${mf}.mountPath`);
    else if (mountPaths.has(m.mountPath)) errs.invalid(`${mf}.mountPath`, m.mountPath, 'must be unique');
    if (m.mountPath) mountPaths.add(m.mountPath);
    if (m.subPath && (m.subPath.startsWith('/') || m.subPath.split('/').includes('..'))) {
      errs.invalid(`${mf}.subPath`, m.subPath, "must be a relative path without '..'");
    }
  });
  validateResources(c, field, errs);
  if (init && c.restartPolicy !== 'Always') {
    // Plain init containers run to completion: probes and lifecycle make no sense there.
    for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle'] as const) {
      if (c[key] !== undefined)
        errs.forbidden(`${field}.${key}`, 'may not be set for init containers without restartPolicy=Always');
    }
    if (c.restartPolicy !== undefined)
      errs.unsupported(`${field}.restartPolicy`, c.restartPolicy, ['Always']);
    return;
  }
  if (!init && c.restartPolicy !== undefined) {
    errs.forbidden(`${field}.restartPolicy`, 'may not be set for non-init containers');
  }
  validateProbe(c.livenessProbe, `${field}.livenessProbe`, errs, true);
  validateProbe(c.readinessProbe, `${field}.readinessProbe`, errs, false);
  if (c.readinessProbe?.terminationGracePeriodSeconds !== undefined) {
    errs.invalid(
      `${field}.readinessProbe.terminationGracePeriodSeconds`,
      c.readinessProbe.terminationGracePeriodSeconds,
      'must not be set for readinessProbes',
    );
  }
  validateProbe(c.startupProbe, `${field}.startupProbe`, errs, true);
  for (const hook of ['postStart', 'preStop'] as const) {
    const handler = c.lifecycle?.[hook];
    if (handler)
      validateHandler(
        handler,
        `${field}.lifecycle.${hook}`,
        errs,
        ['exec', 'httpGet', 'tcpSocket', 'sleep'],
        gracePeriod,
      );
  }
}

function validateVolumes(volumes: Volume[], errs: Errors): Set<string> {
  const names = new Set<string>();
  volumes.forEach((v, i) => {
    const f = `spec.volumes[${i}]`;
    if (!v.name) errs.required(`${f}.name`);
    else if (!isDNS1123Label(v.name)) errs.invalid(`${f}.name`, v.name, 'must be a DNS-1123 label');
    else if (names.has(v.name)) errs.duplicate(`${f}.name`, v.name);
    if (v.name) names.add(v.name);
    const sources = volumeSourcesOf(v);
    if (sources.length === 0) errs.required(f, 'must specify a volume type');
    else if (sources.length > 1)
      errs.forbidden(`${f}.${sources[1]}`, 'may not specify more than 1 volume type');
    if (v.hostPath && !v.hostPath.path) errs.required(`${f}.hostPath.path`);
    for (const [key, mode] of [
      ['configMap', v.configMap?.defaultMode],
      ['secret', v.secret?.defaultMode],
      ['downwardAPI', v.downwardAPI?.defaultMode],
      ['projected', v.projected?.defaultMode],
    ] as const) {
      if (mode !== undefined && (mode < 0 || mode > 0o777)) {
        errs.invalid(
          `${f}.${key}.defaultMode`,
          mode,
          'must be a number between 0 and 0777 (octal), both inclusive',
        );
      }
    }
  });
  return names;
}

function validateSpec(spec: PodSpec, errs: Errors): void {
  const hostNetwork = spec.hostNetwork === true;
  const grace = spec.terminationGracePeriodSeconds;
  const volumes = validateVolumes(spec.volumes ?? [], errs);
  if ((spec.containers ?? []).length === 0) errs.required('spec.containers');
  const names = new Set<string>();
  const hostPorts = new Set<string>();
  const checkName = (c: Container, field: string) => {
    if (!c.name) return;
    if (names.has(c.name)) errs.duplicate(`${field}.name`, c.name);
    names.add(c.name);
  };
  (spec.initContainers ?? []).forEach((c, i) => {
    checkName(c, `spec.initContainers[${i}]`);
    // Init containers run one at a time: each one's host ports are checked on their own.
    validateContainer(c, `spec.initContainers[${i}]`, errs, volumes, hostNetwork, new Set(), true, grace);
  });
  (spec.containers ?? []).forEach((c, i) => {
    checkName(c, `spec.containers[${i}]`);
    validateContainer(c, `spec.containers[${i}]`, errs, volumes, hostNetwork, hostPorts, false, grace);
  });
  if (
    spec.restartPolicy !== undefined &&
    !restartPolicies.includes(spec.restartPolicy as (typeof restartPolicies)[number])
  ) {
    errs.unsupported('spec.restartPolicy', spec.restartPolicy, restartPolicies);
  }
  if (spec.dnsPolicy !== undefined && !dnsPolicies.includes(spec.dnsPolicy as (typeof dnsPolicies)[number])) {
    errs.unsupported('spec.dnsPolicy', spec.dnsPolicy, dnsPolicies);
  }
  if (spec.dnsPolicy === 'None' && !spec.dnsConfig) {
    errs.required('spec.dnsConfig', 'must provide `dnsConfig` when `dnsPolicy` is None');
  }
  if (spec.terminationGracePeriodSeconds !== undefined && spec.terminationGracePeriodSeconds < 0) {
    errs.invalid(
      'spec.terminationGracePeriodSeconds',
      spec.terminationGracePeriodSeconds,
      'must be greater than or equal to 0',
    );
  }
  if (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds <= 0) {
    errs.invalid('spec.activeDeadlineSeconds', spec.activeDeadlineSeconds, 'must be greater than 0');
  }
}

function validateMeta(pod: Pod, errs: Errors): void {
  const meta = pod.metadata ?? {};
  if (!meta.name) errs.required('metadata.name', 'name or generateName is required');
  else if (!isDNS1123Subdomain(meta.name))
    errs.invalid(
      'metadata.name',
      meta.name,
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
    );
  if (meta.namespace && !isDNS1123Label(meta.namespace))
    errs.invalid('metadata.namespace', meta.namespace, 'must be a DNS-1123 label');
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    if (!isQualifiedName(k))
      errs.invalid(`metadata.labels[${JSON.stringify(k)}]`, k, 'must be a qualified name');
    if (typeof v !== 'string' || !isLabelValue(v))
      errs.invalid(`metadata.labels[${JSON.stringify(k)}]`, v, 'must be a valid label value');
  }
  let annotationBytes = 0;
  for (const [k, v] of Object.entries(meta.annotations ?? {})) {
    if (!isQualifiedName(k.toLowerCase()))
      errs.invalid(`metadata.annotations[${JSON.stringify(k)}]`, k, 'must be a qualified name');
    annotationBytes += k.length + (typeof v === 'string' ? v.length : 0);
  }
  if (annotationBytes > 256 * 1024)
    errs.invalid('metadata.annotations', annotationBytes, 'must have at most 262144 bytes');
}

/**
 * The errors of `pod` without any origin: schema errors first; when the shape is right, the
 * hand-written rules.
 *
 * @public
 */
export function podFieldErrors(pod: unknown): FieldError[] {
  const schema = validatePodSchema(pod);
  if (schema.length > 0) return schema;
  const errs = new Errors();
  validateMeta(pod as Pod, errs);
  validateSpec((pod as Pod).spec ?? { containers: [] }, errs);
  return errs.list;
}

/**
 * Validates a pod as the kubelet does before it enters the stream. Returns the error (naming
 * source, file or URL, pod and fields) or undefined when the pod is valid. Pods from the API
 * server are validated but not defaulted; static pods are defaulted first
 * (see `decodeStaticPod`).
 *
 * @public
 */
export function validatePod(pod: unknown, origin: PodOrigin): PodValidationError | undefined {
  const errors = podFieldErrors(pod);
  if (errors.length === 0) return undefined;
  const meta = (pod as Pod | null)?.metadata;
  const object =
    meta && typeof meta === 'object'
      ? {
          ...(typeof meta.namespace === 'string' ? { namespace: meta.namespace } : {}),
          ...(typeof meta.name === 'string' ? { name: meta.name } : {}),
        }
      : undefined;
  return new PodValidationError(origin, object, errors);
}
