// Which API objects a pod references (upstream `HasAPIObjectReference` in
// `pkg/api/pod/util.go`): the basis of the PreventStaticPodAPIReferences rejection.
import type { Container, Pod } from '@kubelet-kit/core';

function containersOf(pod: Pod): Container[] {
  const spec = pod.spec;
  return [
    ...(spec?.initContainers ?? []),
    ...(spec?.containers ?? []),
    ...((spec?.ephemeralContainers ?? []) as Container[]),
  ];
}

function referencesSecret(pod: Pod): boolean {
  if ((pod.spec?.imagePullSecrets ?? []).some((s) => s.name)) return true;
  for (const c of containersOf(pod)) {
    if ((c.envFrom ?? []).some((e) => e.secretRef)) return true;
    if ((c.env ?? []).some((e) => e.valueFrom?.secretKeyRef)) return true;
  }
  for (const v of pod.spec?.volumes ?? []) {
    if (
      v.secret ||
      v.azureFile ||
      v.cephfs?.secretRef ||
      v.cinder?.secretRef ||
      v.flexVolume?.secretRef ||
      v.rbd?.secretRef ||
      v.scaleIO?.secretRef ||
      v.iscsi?.secretRef ||
      v.storageos?.secretRef ||
      v.csi?.nodePublishSecretRef ||
      (v.projected?.sources ?? []).some((s) => s.secret)
    ) {
      return true;
    }
  }
  return false;
}

function referencesConfigMap(pod: Pod): boolean {
  for (const c of containersOf(pod)) {
    if ((c.envFrom ?? []).some((e) => e.configMapRef)) return true;
    if ((c.env ?? []).some((e) => e.valueFrom?.configMapKeyRef)) return true;
  }
  return (pod.spec?.volumes ?? []).some(
    (v) => v.configMap || (v.projected?.sources ?? []).some((s) => s.configMap),
  );
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
 * The plural resource of the first API object `pod` references (`serviceaccounts`, `secrets`,
 * `configmaps (via projected volumes)`, …), or undefined when it references none. A volume or
 * projection of an unknown kind counts as a reference, as upstream's rejects it.
 */
export function apiObjectReference(pod: Pod): string | undefined {
  if (pod.spec?.serviceAccountName) return 'serviceaccounts';
  if (referencesSecret(pod)) return 'secrets';
  if (referencesConfigMap(pod)) return 'configmaps';
  if ((pod.spec?.resourceClaims ?? []).length > 0) return 'resourceclaims';
  for (const v of pod.spec?.volumes ?? []) {
    const record = v as unknown as Record<string, unknown>;
    if (nodeLocalVolumeKeys.some((k) => record[k] != null)) continue;
    if (v.csi) return 'csidrivers (via CSI volumes)';
    if (v.glusterfs) return 'endpoints (via glusterFS volumes)';
    if (v.persistentVolumeClaim) return 'persistentvolumeclaims';
    if (v.ephemeral) return 'persistentvolumeclaims (via ephemeral volumes)';
    if (v.projected) {
      for (const s of v.projected.sources ?? []) {
        const source = s as unknown as Record<string, unknown>;
        if (source.serviceAccountToken) return 'serviceaccounts (via projected volumes)';
        if (source.clusterTrustBundle) return 'clustertrustbundles';
        if (source.podCertificate) return 'podcertificates';
        if (source.downwardAPI) continue;
        return `unknown source for projected volume ${JSON.stringify(v.name)}`;
      }
      continue;
    }
    return `unknown volume type for volume ${JSON.stringify(v.name)}`;
  }
  return undefined;
}
