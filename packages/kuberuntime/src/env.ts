import os from 'node:os';
import {
  type Container,
  type EnvVar,
  type ObjectGetter,
  type Pod,
  parseQuantity,
  type Quantity,
  quantityMilliValue,
} from '@kubelet-kit/core';
import { ContainerConfigError } from './errors.js';
import { expand, mappingFuncFor } from './expansion.js';

// Container environment (upstream `kubelet_pods.go` makeEnvironmentVariables): envFrom, then
// env in order, each value expanded against the variables defined before it.

/** What the environment of a container may refer to besides the pod itself. @internal */
export interface EnvContext {
  readonly nodeName: string;
  readonly podIP: string;
  readonly podIPs: readonly string[];
  readonly hostIPs: readonly string[];
  readonly objectGetter?: ObjectGetter;
  /** Node allocatable, for resourceFieldRef of a container without limits. */
  readonly nodeAllocatable?: { readonly cpu?: Quantity; readonly memory?: Quantity };
  readonly signal?: AbortSignal;
}

/** Thrown when the environment cannot be built (a missing ConfigMap key, a bad field path). */
export class EnvError extends ContainerConfigError {
  constructor(message: string) {
    super(message);
    this.name = 'EnvError';
  }
}

function formatMap(map: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map?.[k] ?? '')}`)
    .join('\n');
}

/** The value of a downward-API field path (upstream `podFieldSelectorRuntimeValue`). */
export function podFieldValue(pod: Pod, fieldPath: string, ctx: EnvContext): string {
  switch (fieldPath) {
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? ctx.nodeName;
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ctx.hostIPs.join(',');
    case 'status.podIP':
      return ctx.podIP;
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'metadata.labels':
      return formatMap(pod.metadata?.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata?.annotations);
  }
  const sub = /^metadata\.(labels|annotations)\['([^']*)'\]$/.exec(fieldPath);
  if (sub) {
    const map = sub[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations;
    return map?.[sub[2]!] ?? '';
  }
  throw new EnvError(`unsupported fieldPath: ${fieldPath}`);
}

/** The value of a resourceFieldRef (upstream `ExtractContainerResourceValue`), rounded up. */
export function containerResourceValue(
  container: Container,
  resource: string,
  divisor: Quantity | undefined,
  ctx: Pick<EnvContext, 'nodeAllocatable'>,
): string {
  const [kind, name] = resource.split('.') as [string, string | undefined];
  const alloc = {
    cpu: ctx.nodeAllocatable?.cpu ?? String(os.cpus().length),
    memory: ctx.nodeAllocatable?.memory ?? String(os.totalmem()),
  };
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  let q: Quantity | undefined;
  if (kind === 'limits') {
    q = limits[name ?? ''];
    // A missing or zero CPU or memory limit reads as the node's allocatable.
    if ((name === 'cpu' || name === 'memory') && (q === undefined || parseQuantity(q) === 0)) q = alloc[name];
  } else if (kind === 'requests') q = requests[name ?? ''] ?? limits[name ?? ''];
  if (q === undefined) {
    // An unset request, or hugepages without a limit, is a zero quantity.
    if (kind === 'requests' || name?.startsWith('hugepages-')) return '0';
    throw new EnvError(`unsupported container resource: ${resource}`);
  }
  if (name === 'cpu') {
    const d = quantityMilliValue(divisor ?? '1');
    return String(Math.ceil(quantityMilliValue(q) / (d || 1)));
  }
  const d = parseQuantity(divisor ?? '1');
  return String(Math.ceil(parseQuantity(q) / (d || 1)));
}

/** The container's environment as ordered name/value pairs (later definitions win). */
export async function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  ctx: EnvContext,
): Promise<Map<string, string>> {
  const env = new Map<string, string>();
  const ns = pod.metadata?.namespace ?? '';
  const getter = ctx.objectGetter;
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    if (from.configMapRef) {
      const ref = from.configMapRef;
      const cm = getter ? await getter.getConfigMap(ns, ref.name ?? '', ctx.signal) : undefined;
      if (!cm) {
        if (ref.optional) continue;
        throw new EnvError(`configmap "${ref.name}" not found`);
      }
      for (const [k, v] of Object.entries(cm.data ?? {})) env.set(prefix + k, v);
    } else if (from.secretRef) {
      const ref = from.secretRef;
      const secret = getter ? await getter.getSecret(ns, ref.name ?? '', ctx.signal) : undefined;
      if (!secret) {
        if (ref.optional) continue;
        throw new EnvError(`secret "${ref.name}" not found`);
      }
      for (const [k, v] of Object.entries(secret.data ?? {}))
        env.set(prefix + k, Buffer.from(v, 'base64').toString());
      for (const [k, v] of Object.entries(secret.stringData ?? {})) env.set(prefix + k, v);
    }
  }
  for (const e of container.env ?? []) {
    const value = await envValue(pod, container, e, env, ctx);
    if (value !== undefined) env.set(e.name, value);
  }
  return env;
}

async function envValue(
  pod: Pod,
  container: Container,
  e: EnvVar,
  defined: ReadonlyMap<string, string>,
  ctx: EnvContext,
): Promise<string | undefined> {
  const ns = pod.metadata?.namespace ?? '';
  const from = e.valueFrom;
  if (!from) return expand(e.value ?? '', mappingFuncFor(defined));
  if (from.fieldRef) return podFieldValue(pod, from.fieldRef.fieldPath, ctx);
  if (from.resourceFieldRef) {
    return containerResourceValue(
      container,
      from.resourceFieldRef.resource,
      from.resourceFieldRef.divisor,
      ctx,
    );
  }
  if (from.configMapKeyRef) {
    const ref = from.configMapKeyRef;
    const cm = ctx.objectGetter
      ? await ctx.objectGetter.getConfigMap(ns, ref.name ?? '', ctx.signal)
      : undefined;
    const value = cm?.data?.[ref.key];
    if (value === undefined) {
      if (ref.optional) return undefined;
      if (!cm) throw new EnvError(`configmap "${ref.name}" not found`);
      throw new EnvError(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`);
    }
    return value;
  }
  if (from.secretKeyRef) {
    const ref = from.secretKeyRef;
    const secret = ctx.objectGetter
      ? await ctx.objectGetter.getSecret(ns, ref.name ?? '', ctx.signal)
      : undefined;
    const raw = secret?.data?.[ref.key];
    const value = raw !== undefined ? Buffer.from(raw, 'base64').toString() : secret?.stringData?.[ref.key];
    if (value === undefined) {
      if (ref.optional) return undefined;
      if (!secret) throw new EnvError(`secret "${ref.name}" not found`);
      throw new EnvError(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`);
    }
    return value;
  }
  return e.value ?? '';
}
