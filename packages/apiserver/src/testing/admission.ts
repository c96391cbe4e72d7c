// The admission plugins of a default control plane that change pods as they are created
// (plugin/pkg/admission/serviceaccount and defaulttolerationseconds): the ServiceAccount must
// exist, and the pod gets the projected `kube-api-access-…` volume mounted in every container,
// and tolerations of 300 s for not-ready and unreachable nodes.
import { generateName } from './defaults.js';
import type { JsonObject } from './patch.js';
import { StatusError } from './status.js';

// biome-ignore lint/suspicious/noExplicitAny: admission edits loosely typed pods
type Obj = Record<string, any>;

/** Where the ServiceAccount admission mounts the API credentials. @internal */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Upstream's projected token lifetime: an hour and seven seconds (the 7 marks it as defaulted). */
const TOKEN_EXPIRATION_SECONDS = 3607;

/** Mutates a new pod as the ServiceAccount and DefaultTolerationSeconds plugins do. @internal */
export function admitPod(pod: JsonObject, serviceAccountExists: (ns: string, name: string) => boolean): void {
  const p = pod as Obj;
  const ns = String(p.metadata?.namespace ?? 'default');
  const spec: Obj = p.spec ?? {};
  const sa = String(spec.serviceAccountName ?? spec.serviceAccount ?? 'default');
  // Mirror pods are left alone by the ServiceAccount plugin.
  const mirror = p.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined;
  if (!mirror) {
    if (!serviceAccountExists(ns, sa)) {
      throw new StatusError(
        403,
        'Forbidden',
        `pods "${p.metadata?.name ?? ''}" is forbidden: error looking up service account ${ns}/${sa}: serviceaccount "${sa}" not found`,
        { name: p.metadata?.name ?? '', kind: 'pods' },
      );
    }
    spec.serviceAccountName = sa;
    const containers: Obj[] = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
    const mounted = containers.some((c) =>
      (c.volumeMounts ?? []).some((m: Obj) => m.mountPath === SERVICE_ACCOUNT_MOUNT),
    );
    if (spec.automountServiceAccountToken !== false && !mounted) {
      const name = generateName('kube-api-access-');
      spec.volumes = [
        ...(spec.volumes ?? []),
        {
          name,
          projected: {
            defaultMode: 0o644,
            sources: [
              { serviceAccountToken: { expirationSeconds: TOKEN_EXPIRATION_SECONDS, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              {
                downwardAPI: {
                  items: [
                    { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                  ],
                },
              },
            ],
          },
        },
      ];
      for (const c of containers) {
        c.volumeMounts = [
          ...(c.volumeMounts ?? []),
          { name, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT },
        ];
      }
    }
  }
  spec.tolerations ??= [];
  const tolerations: Obj[] = spec.tolerations;
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    const has = tolerations.some(
      (t) =>
        (t.key === key || (t.key === undefined && t.operator === 'Exists')) &&
        (t.effect === undefined || t.effect === 'NoExecute'),
    );
    if (!has) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  }
  p.spec = spec;
}
