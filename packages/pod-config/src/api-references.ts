// Which API objects a pod references (upstream `HasAPIObjectReference` in
// `pkg/api/pod/util.go`): the basis of the PreventStaticPodAPIReferences rejection.
import type { Container, Pod } from '@kubelet-kit/core';

/**
 * The first API object reference of a pod: the plural resource and the field that makes it.
 *
 * @public
 */
export interface APIObjectReference {
  /** e.g. `secrets`, `configmaps (via projected volumes)`, `serviceaccounts`. */
  readonly resource: string;
  /** e.g. `spec.volumes[0].secret`, `spec.containers[1].env[0].valueFrom.secretKeyRef`. */
  readonly field: string;
}

function containerLists(pod: Pod): [string, Container[]][] {
  const spec = pod.spec;
  return [
    ['spec.initContainers', spec?.initContainers ?? []],
    ['spec.containers', spec?.containers ?? []],
    ['spec.ephemeralContainers', (spec?.ephemeralContainers ?? []) as Container[]],
  ];
}

/** The field of the first container env reference `kind` makes (`secretRef`/`secretKeyRef` or the configMap ones). */
function containerReference(
  pod: Pod,
  fromKey: 'secretRef' | 'configMapRef',
  keyRef: 'secretKeyRef' | 'configMapKeyRef',
): string | undefined {
  for (const [path, containers] of containerLists(pod)) {
    for (const [i, c] of containers.entries()) {
      const envFrom = (c.envFrom ?? []).findIndex((e) => e[fromKey]);
      if (envFrom >= 0) return `${path}[${i}].envFrom[${envFrom}].${fromKey}`;
      const env = (c.env ?? []).findIndex((e) => e.valueFrom?.[keyRef]);
      if (env >= 0) return `${path}[${i}].env[${env}].valueFrom.${keyRef}`;
    }
  }
  return undefined;
}

function secretReference(pod: Pod): string | undefined {
  const pull = (pod.spec?.imagePullSecrets ?? []).findIndex((s) => s.name);
  if (pull >= 0) return `spec.imagePullSecrets[${pull}]`;
  const inContainer = containerReference(pod, 'secretRef', 'secretKeyRef');
  if (inContainer) return inContainer;
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const f = `spec.volumes[${i}]`;
    if (v.secret) return `${f}.secret`;
    if (v.azureFile) return `${f}.azureFile`;
    // An unnamed secretRef names no secret (upstream skips empty names), and these volume kinds
    // are otherwise node-local.
    if (v.cephfs?.secretRef?.name) return `${f}.cephfs.secretRef`;
    if (v.cinder?.secretRef?.name) return `${f}.cinder.secretRef`;
    if (v.flexVolume?.secretRef?.name) return `${f}.flexVolume.secretRef`;
    if (v.rbd?.secretRef?.name) return `${f}.rbd.secretRef`;
    if (v.scaleIO?.secretRef?.name) return `${f}.scaleIO.secretRef`;
    if (v.iscsi?.secretRef?.name) return `${f}.iscsi.secretRef`;
    if (v.storageos?.secretRef?.name) return `${f}.storageos.secretRef`;
    if (v.csi?.nodePublishSecretRef?.name) return `${f}.csi.nodePublishSecretRef`;
    const projected = (v.projected?.sources ?? []).findIndex((s) => s.secret);
    if (projected >= 0) return `${f}.projected.sources[${projected}].secret`;
  }
  return undefined;
}

function configMapReference(pod: Pod): string | undefined {
  const inContainer = containerReference(pod, 'configMapRef', 'configMapKeyRef');
  if (inContainer) return inContainer;
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    if (v.configMap) return `spec.volumes[${i}].configMap`;
    const projected = (v.projected?.sources ?? []).findIndex((s) => s.configMap);
    if (projected >= 0) return `spec.volumes[${i}].projected.sources[${projected}].configMap`;
  }
  return undefined;
}

const nodeLocalVolumeKeys = [
  'awsElasticBlockStore',
  'azureDisk',
  'cephfs',
  'cinder',
  'downwardAPI',
  'emptyDir',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'hostPath',
  'image',
  'iscsi',
  'nfs',
  'photonPersistentDisk',
  'portworxVolume',
  'quobyte',
  'rbd',
  'scaleIO',
  'storageos',
  'vsphereVolume',
];

/**
 * The first API object `pod` references, in upstream's order (service account, secrets,
 * configMaps, resource claims, then volumes), or undefined when it references none. A volume or
 * projection of an unknown kind counts as a reference, as upstream rejects it.
 *
 * @public
 */
export function apiObjectReference(pod: Pod): APIObjectReference | undefined {
  if (pod.spec?.serviceAccountName) return { resource: 'serviceaccounts', field: 'spec.serviceAccountName' };
  const secret = secretReference(pod);
  if (secret) return { resource: 'secrets', field: secret };
  const configMap = configMapReference(pod);
  if (configMap) return { resource: 'configmaps', field: configMap };
  if ((pod.spec?.resourceClaims ?? []).length > 0)
    return { resource: 'resourceclaims', field: 'spec.resourceClaims' };
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const f = `spec.volumes[${i}]`;
    const record = v as unknown as Record<string, unknown>;
    if (nodeLocalVolumeKeys.some((k) => record[k] != null)) continue;
    if (v.csi) return { resource: 'csidrivers (via CSI volumes)', field: `${f}.csi` };
    if (v.glusterfs) return { resource: 'endpoints (via glusterFS volumes)', field: `${f}.glusterfs` };
    if (v.persistentVolumeClaim)
      return { resource: 'persistentvolumeclaims', field: `${f}.persistentVolumeClaim` };
    if (v.ephemeral)
      return { resource: 'persistentvolumeclaims (via ephemeral volumes)', field: `${f}.ephemeral` };
    if (v.projected) {
      for (const [j, s] of (v.projected.sources ?? []).entries()) {
        const sf = `${f}.projected.sources[${j}]`;
        if (s.serviceAccountToken)
          return { resource: 'serviceaccounts (via projected volumes)', field: `${sf}.serviceAccountToken` };
        if (s.clusterTrustBundle)
          return { resource: 'clustertrustbundles', field: `${sf}.clusterTrustBundle` };
        if (s.podCertificate) return { resource: 'podcertificates', field: `${sf}.podCertificate` };
        if (s.downwardAPI) continue;
        return { resource: `unknown source for projected volume ${JSON.stringify(v.name)}`, field: sf };
      }
      continue;
    }
    return { resource: `unknown volume type for volume ${JSON.stringify(v.name)}`, field: f };
  }
  return undefined;
}
