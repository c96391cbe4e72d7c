// What the real API server fills in on create: system metadata (uid, creationTimestamp,
// generation, name from generateName) and the defaults of k8s.io/kubernetes pkg/apis/core
// v1/defaults.go that the kubelet reads (pod restartPolicy, dnsPolicy, grace period, container
// pull policy; Service type and cluster IP), plus the pod's QoS class the server sets.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Json, JsonObject } from './patch.js';
import type { ResourceInfo } from './resources.js';

// biome-ignore lint/suspicious/noExplicitAny: defaulting walks loosely typed objects
type Obj = Record<string, any>;

/** Upstream's name-generation alphabet (no vowels, no confusable digits). */
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** generateName plus five random characters, as upstream SimpleNameGenerator. @internal */
export function generateName(prefix: string): string {
  const bytes = randomBytes(5);
  let s = '';
  for (const b of bytes) s += ALPHABET[b % ALPHABET.length];
  return `${prefix}${s}`;
}

/** RFC 3339 at second precision, as metav1.Time marshals. @internal */
export function rfc3339(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** Fills the system metadata of a new object. @internal */
export function prepareForCreate(
  info: ResourceInfo,
  obj: JsonObject,
  now: number,
  keepIdentity = false,
): void {
  const meta = obj.metadata as Obj;
  // Direct creates by a test may pin the uid and creation time; API writes never do.
  if (!keepIdentity || !meta.uid) meta.uid = randomUUID();
  if (!keepIdentity || !meta.creationTimestamp) meta.creationTimestamp = rfc3339(now);
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  delete meta.managedFields;
  if (info.plural === 'pods') meta.generation = 1;
  else delete meta.generation;
  if (!info.namespaced) delete meta.namespace;
}

function imagePullPolicy(image: string): string {
  const last = image.split('/').pop() ?? '';
  if (image.includes('@')) return 'IfNotPresent';
  const tag = last.includes(':') ? last.split(':').pop() : undefined;
  return !tag || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Obj): void {
  c.imagePullPolicy ??= imagePullPolicy(String(c.image ?? ''));
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.resources ??= {};
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
}

/** Upstream's GetPodQOS over requests and limits of cpu and memory. */
function qosClass(spec: Obj): string {
  const containers: Obj[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    for (const r of ['cpu', 'memory']) {
      if (req[r] !== undefined || lim[r] !== undefined) any = true;
      const want = req[r] ?? lim[r];
      if (lim[r] === undefined || String(want) !== String(lim[r])) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** Applies the defaults of a new or replaced object's spec. @internal */
export function applyDefaults(info: ResourceInfo, obj: JsonObject, allocateClusterIP: () => string): void {
  const o = obj as Obj;
  if (info.group === '' && info.plural === 'pods') {
    o.spec ??= {};
    const spec: Obj = o.spec;
    spec.restartPolicy ??= 'Always';
    spec.dnsPolicy ??= 'ClusterFirst';
    spec.terminationGracePeriodSeconds ??= 30;
    spec.schedulerName ??= 'default-scheduler';
    spec.securityContext ??= {};
    spec.enableServiceLinks ??= true;
    spec.serviceAccountName ??= spec.serviceAccount ?? 'default';
    spec.serviceAccount ??= spec.serviceAccountName;
    spec.priority ??= 0;
    for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) defaultContainer(c);
    o.status ??= {};
    const status: Obj = o.status;
    status.phase ??= 'Pending';
    status.qosClass ??= qosClass(spec);
  }
  if (info.group === '' && info.plural === 'services') {
    o.spec ??= {};
    const spec: Obj = o.spec;
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    if (spec.type !== 'ExternalName') {
      if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = allocateClusterIP();
      spec.clusterIPs ??= [spec.clusterIP];
      spec.ipFamilies ??= ['IPv4'];
      spec.ipFamilyPolicy ??= 'SingleStack';
      spec.internalTrafficPolicy ??= 'Cluster';
    }
    for (const p of spec.ports ?? []) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
    }
    o.status ??= { loadBalancer: {} };
  }
  if (info.group === '' && info.plural === 'namespaces') {
    o.spec ??= { finalizers: ['kubernetes'] };
    o.status = { phase: 'Active' };
    const meta = o.metadata as Obj;
    meta.labels = { ...(meta.labels ?? {}), 'kubernetes.io/metadata.name': meta.name };
  }
  if (info.group === '' && info.plural === 'secrets') o.type ??= 'Opaque';
}

/** A self-signed-looking CA bundle for `kube-root-ca.crt` (not a usable certificate). @internal */
export const ROOT_CA =
  '-----BEGIN CERTIFICATE-----\nMIIBkubeletkitTestingRootCAnotARealCertificate0000000000000000000\n-----END CERTIFICATE-----\n';

/** The objects a fresh control plane holds. @internal */
export function bootstrapObjects(): { plural: string; obj: Json }[] {
  const ns = (name: string) => ({
    plural: 'namespaces',
    obj: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
  });
  return [
    ns('default'),
    ns('kube-system'),
    ns('kube-public'),
    ns('kube-node-lease'),
    {
      plural: 'services',
      obj: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: 'kubernetes',
          namespace: 'default',
          labels: { component: 'apiserver', provider: 'kubernetes' },
        },
        spec: {
          clusterIP: '10.96.0.1',
          ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }],
        },
      },
    },
  ];
}
