// The defaults a Kubernetes API server applies to a pod on create (upstream
// `pkg/apis/core/v1/defaults.go` and its generated `SetObjectDefaults_Pod`). Static pods never
// pass through an API server, so the kubelet's decoder applies them; we do the same.
import type {
  Container,
  ContainerPort,
  EnvVar,
  HTTPGetAction,
  LifecycleHandler,
  Pod,
  PodSpec,
  Probe,
  Volume,
} from '@kubelet-kit/core';

/**
 * `0644`, the default file mode of configMap, secret, downwardAPI and projected volumes.
 *
 * @public
 */
export const DefaultVolumeFileMode = 0o644;
/**
 * The default `terminationGracePeriodSeconds`.
 *
 * @public
 */
export const DefaultTerminationGracePeriodSeconds = 30;
/**
 * The default `schedulerName`.
 *
 * @public
 */
export const DefaultSchedulerName = 'default-scheduler';
/**
 * The default `terminationMessagePath`.
 *
 * @public
 */
export const DefaultTerminationMessagePath = '/dev/termination-log';

// The docker reference grammar (distribution/reference): [domain '/'] path [':' tag] ['@' digest].
const hostComponent = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)';
const domainPart = `(?:${hostComponent}(?:\\.${hostComponent})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?`;
const pathComponent = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const imageReferenceRe = new RegExp(
  `^((?:${domainPart}/)?${pathComponent}(?:/${pathComponent})*)(?::([\\w][\\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$`,
);
/** Hex lengths of the digest algorithms the API server can verify. */
const digestHexLength: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };

/**
 * The tag the API server reads from an image (upstream `parsers.ParseImageName`): `latest` when
 * the reference has neither tag nor digest, `''` when it has only a digest, and undefined when it
 * is not a reference at all (an uppercase repository, a bad digest, …).
 */
function imageTag(image: string): string | undefined {
  // A bare 64-hex string is an image ID, not a repository name.
  if (/^[a-f0-9]{64}$/.test(image)) return undefined;
  const m = imageReferenceRe.exec(image);
  if (!m) return undefined;
  const name = m[1] ?? '';
  const tag = m[2] ?? '';
  const digest = m[3];
  // The name limit applies to the normalized name (docker.io/library/ added to short names).
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  const hasDomain =
    slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase());
  const normalized = hasDomain ? name : `docker.io/${slash >= 0 ? '' : 'library/'}${name}`;
  if (normalized.length > 255) return undefined;
  if (digest !== undefined) {
    const [algorithm = '', hex = ''] = digest.split(':');
    if (digestHexLength[algorithm] !== hex.length || !/^[a-f0-9]+$/.test(hex)) return undefined;
  }
  return tag === '' && digest === undefined ? 'latest' : tag;
}

/**
 * The pull policy the API server picks when a container sets none (upstream
 * `SetDefaults_Container`): `Always` when the reference's tag is `latest` (an untagged image, or
 * `:latest` even beside a digest), `IfNotPresent` otherwise, including a string that does not
 * parse as an image reference.
 *
 * @public
 */
export function defaultImagePullPolicy(image: string): 'Always' | 'IfNotPresent' {
  return imageTag(image) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultHTTPGet(action: HTTPGetAction | undefined): void {
  if (!action) return;
  action.path ??= '/';
  action.scheme ??= 'HTTP';
}

function defaultHandler(handler: LifecycleHandler | undefined): void {
  defaultHTTPGet(handler?.httpGet);
}

function defaultProbe(probe: Probe | undefined): void {
  if (!probe) return;
  probe.timeoutSeconds ??= 1;
  probe.periodSeconds ??= 10;
  probe.successThreshold ??= 1;
  probe.failureThreshold ??= 3;
  defaultHTTPGet(probe.httpGet);
  // GRPCAction.service carries a declared default of "".
  if (probe.grpc) probe.grpc.service ??= '';
}

function defaultPort(port: ContainerPort, hostNetwork: boolean): void {
  port.protocol ??= 'TCP';
  // With the host's network the container port is the host port.
  if (hostNetwork && !port.hostPort) port.hostPort = port.containerPort;
}

function defaultEnv(env: EnvVar[] | undefined): void {
  for (const e of env ?? []) {
    if (e.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ??= 'v1';
  }
}

function defaultContainer(c: Container, hostNetwork: boolean): void {
  if (c.imagePullPolicy === undefined && typeof c.image === 'string') {
    c.imagePullPolicy = defaultImagePullPolicy(c.image);
  }
  c.terminationMessagePath ??= DefaultTerminationMessagePath;
  c.terminationMessagePolicy ??= 'File';
  for (const p of c.ports ?? []) defaultPort(p, hostNetwork);
  defaultEnv(c.env);
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  defaultHandler(c.lifecycle?.postStart);
  defaultHandler(c.lifecycle?.preStop);
  // Requests default to limits for every resource that sets only a limit.
  const limits = c.resources?.limits;
  if (c.resources && limits && Object.keys(limits).length > 0) {
    const requests = { ...(c.resources.requests ?? {}) };
    for (const [name, value] of Object.entries(limits)) {
      if (requests[name] === undefined) requests[name] = value;
    }
    c.resources.requests = requests;
  }
}

const volumeSourceKeys = [
  'awsElasticBlockStore',
  'azureDisk',
  'azureFile',
  'cephfs',
  'cinder',
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'glusterfs',
  'hostPath',
  'image',
  'iscsi',
  'nfs',
  'persistentVolumeClaim',
  'photonPersistentDisk',
  'portworxVolume',
  'projected',
  'quobyte',
  'rbd',
  'scaleIO',
  'secret',
  'storageos',
  'vsphereVolume',
] as const;

/**
 * The volume source keys a volume sets (upstream allows exactly one).
 *
 * @public
 */
export function volumeSourcesOf(volume: Volume): string[] {
  const record = volume as unknown as Record<string, unknown>;
  return volumeSourceKeys.filter((k) => record[k] !== undefined && record[k] !== null);
}

function defaultVolume(v: Volume): void {
  // A volume with no source is an emptyDir.
  if (volumeSourcesOf(v).length === 0) v.emptyDir = {};
  if (v.hostPath) v.hostPath.type ??= '';
  if (v.configMap) v.configMap.defaultMode ??= DefaultVolumeFileMode;
  if (v.secret) v.secret.defaultMode ??= DefaultVolumeFileMode;
  if (v.downwardAPI) {
    v.downwardAPI.defaultMode ??= DefaultVolumeFileMode;
    for (const item of v.downwardAPI.items ?? []) {
      if (item.fieldRef) item.fieldRef.apiVersion ??= 'v1';
    }
  }
  if (v.projected) {
    v.projected.defaultMode ??= DefaultVolumeFileMode;
    for (const s of v.projected.sources ?? []) {
      for (const item of s.downwardAPI?.items ?? []) {
        if (item.fieldRef) item.fieldRef.apiVersion ??= 'v1';
      }
      if (s.serviceAccountToken) s.serviceAccountToken.expirationSeconds ??= 3600;
    }
  }
  if (v.iscsi) {
    v.iscsi.iscsiInterface ??= 'default';
  }
  if (v.rbd) {
    v.rbd.pool ??= 'rbd';
    v.rbd.user ??= 'admin';
    v.rbd.keyring ??= '/etc/ceph/keyring';
  }
  if (v.azureDisk) {
    v.azureDisk.cachingMode ??= 'ReadWrite';
    v.azureDisk.fsType ??= 'ext4';
    v.azureDisk.readOnly ??= false;
    v.azureDisk.kind ??= 'Shared';
  }
}

function defaultPodSpec(spec: PodSpec): void {
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.restartPolicy ??= 'Always';
  spec.securityContext ??= {};
  spec.terminationGracePeriodSeconds ??= DefaultTerminationGracePeriodSeconds;
  spec.schedulerName ??= DefaultSchedulerName;
  spec.enableServiceLinks ??= true;
  // The deprecated `serviceAccount` field is an alias of `serviceAccountName`.
  if (!spec.serviceAccountName && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
  const hostNetwork = spec.hostNetwork === true;
  for (const c of spec.initContainers ?? []) defaultContainer(c, hostNetwork);
  for (const c of spec.containers ?? []) defaultContainer(c, hostNetwork);
  for (const v of spec.volumes ?? []) defaultVolume(v);
}

/**
 * Applies, in place, the defaults an API server would have applied to `pod` on create. Values the
 * manifest sets are kept. Returns `pod`.
 *
 * @public
 */
export function setPodDefaults(pod: Pod): Pod {
  pod.apiVersion ??= 'v1';
  pod.kind ??= 'Pod';
  pod.spec ??= { containers: [] };
  defaultPodSpec(pod.spec);
  return pod;
}
