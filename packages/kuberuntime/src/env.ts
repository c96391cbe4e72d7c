import net from 'node:net';
import os from 'node:os';
import {
  type Container,
  type EnvVar,
  isStaticPod,
  type ObjectGetter,
  type Pod,
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  type Service,
  type ServiceLister,
} from '@kubelet-kit/core';
import { ContainerConfigError } from './errors.js';
import { expand, mappingFuncFor } from './expansion.js';

// Container environment (upstream `kubelet_pods.go` makeEnvironmentVariables): envFrom, then
// env in order, each value expanded against the variables defined before it and the service
// variables; then the service variables the container does not define itself.

/** What the environment of a container may refer to besides the pod itself. @internal */
export interface EnvContext {
  readonly nodeName: string;
  readonly podIP: string;
  readonly podIPs: readonly string[];
  readonly hostIPs: readonly string[];
  readonly objectGetter?: ObjectGetter;
  /** The cluster's Services, for service link variables; without it there are none. */
  readonly serviceLister?: ServiceLister;
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

/** upstream makeEnvVariableName: upper case, `-` as `_`. */
function envVariableName(name: string): string {
  return name.toUpperCase().replaceAll('-', '_');
}

/** A Service with a cluster IP (not headless, not ExternalName): upstream IsServiceIPSet. */
function isServiceIPSet(service: Service): boolean {
  const ip = service.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None';
}

/** `host:port`, an IPv6 host in brackets (Go's net.JoinHostPort). */
function joinHostPort(host: string, port: number): string {
  return net.isIPv6(host) || host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The variables that tell a container where Services are (upstream `envvars.FromServices`):
 * `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT` (the first port), `<NAME>_SERVICE_PORT_<PORT>`
 * per named port, and Docker's link variables `<NAME>_PORT`, `<NAME>_PORT_<n>_<PROTO>` and its
 * `_PROTO`, `_PORT`, `_ADDR`. Services without a cluster IP, or without ports, give none.
 * @internal
 */
export function fromServices(services: readonly Service[]): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const service of services) {
    const ports = service.spec?.ports ?? [];
    if (!isServiceIPSet(service) || ports.length === 0) continue;
    const ip = service.spec?.clusterIP ?? '';
    const prefix = envVariableName(service.metadata?.name ?? '');
    out.push({ name: `${prefix}_SERVICE_HOST`, value: ip });
    out.push({ name: `${prefix}_SERVICE_PORT`, value: String(ports[0]!.port) });
    for (const p of ports) {
      if (p.name)
        out.push({ name: `${prefix}_SERVICE_PORT_${envVariableName(p.name)}`, value: String(p.port) });
    }
    ports.forEach((p, i) => {
      const protocol = p.protocol || 'TCP';
      const url = `${protocol.toLowerCase()}://${joinHostPort(ip, p.port)}`;
      // Docker special-cases the first port.
      if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
      const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
      out.push({ name: portPrefix, value: url });
      out.push({ name: `${portPrefix}_PROTO`, value: protocol.toLowerCase() });
      out.push({ name: `${portPrefix}_PORT`, value: String(p.port) });
      out.push({ name: `${portPrefix}_ADDR`, value: ip });
    });
  }
  return out;
}

/** The master services: always in every pod's environment, from the `default` namespace. */
const masterServices = new Set(['kubernetes']);
const masterServiceNamespace = 'default';

/**
 * The service variables a pod in `namespace` sees (upstream getServiceEnvVarMap): the Services
 * of its namespace when `enableServiceLinks`, and `default/kubernetes` always (with service links,
 * a `kubernetes` Service of the pod's own namespace wins over it, as upstream's). Sorted by Service
 * name, so the result is stable.
 * @internal
 */
export function getServiceEnvVarMap(
  lister: ServiceLister | undefined,
  namespace: string,
  enableServiceLinks: boolean,
): Map<string, string> {
  const env = new Map<string, string>();
  if (!lister) return env;
  const byName = new Map<string, Service>();
  for (const s of lister.list(masterServiceNamespace)) {
    const name = s.metadata?.name ?? '';
    if (masterServices.has(name) && isServiceIPSet(s)) byName.set(name, s);
  }
  if (enableServiceLinks) {
    for (const s of lister.list(namespace)) if (isServiceIPSet(s)) byName.set(s.metadata?.name ?? '', s);
  }
  const sorted = [...byName.values()].sort((a, b) =>
    (a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1,
  );
  for (const { name, value } of fromServices(sorted)) env.set(name, value);
  return env;
}

/** The container's environment as ordered name/value pairs (later definitions win). */
export async function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  ctx: EnvContext,
): Promise<Map<string, string>> {
  // A pod from the API server waits for the first list of Services: a kubelet that has just
  // started would otherwise start it without KUBERNETES_SERVICE_HOST, which in-cluster clients
  // need. Static pods do not wait (they may be what serves the API).
  if (ctx.serviceLister && !isStaticPod(pod) && !ctx.serviceLister.hasSynced()) {
    throw new EnvError('services have not yet been read at least once, cannot construct envvars');
  }
  // Unset reads as the API's default, true.
  const serviceEnv = getServiceEnvVarMap(
    ctx.serviceLister,
    pod.metadata?.namespace ?? '',
    pod.spec?.enableServiceLinks !== false,
  );
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
    const value = await envValue(pod, container, e, env, serviceEnv, ctx);
    if (value !== undefined) env.set(e.name, value);
  }
  // The container's own variables win over the service ones.
  for (const [k, v] of serviceEnv) if (!env.has(k)) env.set(k, v);
  return env;
}

async function envValue(
  pod: Pod,
  container: Container,
  e: EnvVar,
  defined: ReadonlyMap<string, string>,
  serviceEnv: ReadonlyMap<string, string>,
  ctx: EnvContext,
): Promise<string | undefined> {
  const ns = pod.metadata?.namespace ?? '';
  const from = e.valueFrom;
  if (!from) return expand(e.value ?? '', mappingFuncFor(defined, serviceEnv));
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
