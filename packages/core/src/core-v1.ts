// The core/v1 pod types as of Kubernetes v1.34: `kubernetes-types` stops at 1.30, so each type
// here is its 1.30 form plus the fields added in 1.31–1.34 (staging/src/k8s.io/api/core/v1/
// types.go), with every nested pod type replaced by the one here. Field names and JSON shapes
// are upstream's; enums stay strings, as kubernetes-types has them.
import type * as v1 from 'kubernetes-types/core/v1.js';

/**
 * A ResourceClaim a container uses (`resources.claims[]`), with `request` (v1.31: one request
 * of the claim).
 * @public
 */
export interface ResourceClaim extends v1.ResourceClaim {
  /** Only this request of the claim, when set (v1.31). */
  request?: string;
}

/**
 * Container or pod-level compute resources.
 * @public
 */
export interface ResourceRequirements extends Omit<v1.ResourceRequirements, 'claims'> {
  claims?: ResourceClaim[];
}

/**
 * A key of an env file in an emptyDir volume (v1.34, EnvFiles alpha).
 * @public
 */
export interface FileKeySelector {
  /** The variable's name in the file. */
  key: string;
  /** Whether the file or key may be missing. */
  optional?: boolean;
  /** The file's path inside the volume. */
  path: string;
  /** The emptyDir volume holding the file. */
  volumeName: string;
}

/**
 * Where an env var's value comes from, with `fileKeyRef` (v1.34).
 * @public
 */
export interface EnvVarSource extends v1.EnvVarSource {
  fileKeyRef?: FileKeySelector;
}

/**
 * An environment variable of a container.
 * @public
 */
export interface EnvVar extends Omit<v1.EnvVar, 'valueFrom'> {
  valueFrom?: EnvVarSource;
}

/**
 * Lifecycle hooks, with `stopSignal` (v1.33, ContainerStopSignals).
 * @public
 */
export interface Lifecycle extends v1.Lifecycle {
  /** The signal that stops the container, e.g. `SIGUSR1`; the image's or SIGTERM otherwise. */
  stopSignal?: string;
}

/**
 * Exit codes a container restart rule matches (v1.34).
 * @public
 */
export interface ContainerRestartRuleOnExitCodes {
  /** `In` or `NotIn`. */
  operator: string;
  values?: number[];
}

/**
 * A container restart rule (v1.34, ContainerRestartRules alpha).
 * @public
 */
export interface ContainerRestartRule {
  /** `Restart`. */
  action: string;
  exitCodes?: ContainerRestartRuleOnExitCodes;
}

/**
 * A container, with `restartPolicyRules` (v1.34) and the v1.34 forms of its nested types.
 * @public
 */
export interface Container extends Omit<v1.Container, 'env' | 'lifecycle' | 'resources'> {
  env?: EnvVar[];
  lifecycle?: Lifecycle;
  resources?: ResourceRequirements;
  restartPolicyRules?: ContainerRestartRule[];
}

/**
 * An ephemeral (debug) container, with the v1.34 fields of {@link Container}.
 * @public
 */
export interface EphemeralContainer extends Omit<v1.EphemeralContainer, 'env' | 'lifecycle' | 'resources'> {
  env?: EnvVar[];
  lifecycle?: Lifecycle;
  resources?: ResourceRequirements;
  restartPolicyRules?: ContainerRestartRule[];
}

/**
 * Pod security attributes, with `supplementalGroupsPolicy` (v1.31) and `seLinuxChangePolicy`
 * (v1.32).
 * @public
 */
export interface PodSecurityContext extends v1.PodSecurityContext {
  /** `MountOption` or `Recursive`. */
  seLinuxChangePolicy?: string;
  /** `Merge` (the default) or `Strict`. */
  supplementalGroupsPolicy?: string;
}

/**
 * An OCI image or artifact mounted as a volume (v1.31, ImageVolume).
 * @public
 */
export interface ImageVolumeSource {
  /** `Always`, `Never` or `IfNotPresent`. */
  pullPolicy?: string;
  reference?: string;
}

/**
 * A private key and certificate chain the kubelet gets for the pod (v1.34, PodCertificateRequest
 * alpha).
 * @public
 */
export interface PodCertificateProjection {
  certificateChainPath?: string;
  credentialBundlePath?: string;
  keyPath?: string;
  /** `RSA3072`, `RSA4096`, `ECDSAP256`, `ECDSAP384`, `ECDSAP521` or `ED25519`. */
  keyType: string;
  maxExpirationSeconds?: number;
  signerName: string;
}

/**
 * One source of a projected volume, with `podCertificate` (v1.34).
 * @public
 */
export interface VolumeProjection extends v1.VolumeProjection {
  podCertificate?: PodCertificateProjection;
}

/**
 * A projected volume.
 * @public
 */
export interface ProjectedVolumeSource extends Omit<v1.ProjectedVolumeSource, 'sources'> {
  sources?: VolumeProjection[];
}

/**
 * A pod volume, with `image` (v1.31).
 * @public
 */
export interface Volume extends Omit<v1.Volume, 'projected'> {
  image?: ImageVolumeSource;
  projected?: ProjectedVolumeSource;
}

/**
 * A pod's spec, with pod-level `resources` (v1.32, PodLevelResources; beta in v1.34) and
 * `hostnameOverride` (v1.34).
 * @public
 */
export interface PodSpec
  extends Omit<
    v1.PodSpec,
    'containers' | 'ephemeralContainers' | 'initContainers' | 'securityContext' | 'volumes'
  > {
  containers: Container[];
  ephemeralContainers?: EphemeralContainer[];
  /** The pod's hostname, in place of its name (or hostname and subdomain). */
  hostnameOverride?: string;
  initContainers?: Container[];
  /** Requests and limits of the whole pod: cpu and memory (and hugepages). */
  resources?: ResourceRequirements;
  securityContext?: PodSecurityContext;
  volumes?: Volume[];
}

/**
 * The Linux identity of a container's first process (v1.31).
 * @public
 */
export interface LinuxContainerUser {
  gid: number;
  supplementalGroups?: number[];
  uid: number;
}

/**
 * The identity of a container's first process, as the runtime reports it (v1.31).
 * @public
 */
export interface ContainerUser {
  linux?: LinuxContainerUser;
}

/**
 * The health of one device of a resource (v1.31).
 * @public
 */
export interface ResourceHealth {
  /** `Healthy`, `Unhealthy` or `Unknown`. */
  health?: string;
  resourceID: string;
}

/**
 * The health of the devices of one resource a container uses (v1.31).
 * @public
 */
export interface ResourceStatus {
  name: string;
  resources?: ResourceHealth[];
}

/**
 * A container's status, with `user`, `allocatedResourcesStatus` (v1.31) and `stopSignal`
 * (v1.33).
 * @public
 */
export interface ContainerStatus extends Omit<v1.ContainerStatus, 'resources'> {
  allocatedResourcesStatus?: ResourceStatus[];
  resources?: ResourceRequirements;
  /** The signal the container is stopped with. */
  stopSignal?: string;
  user?: ContainerUser;
}

/**
 * A pod condition, with `observedGeneration` (v1.33).
 * @public
 */
export interface PodCondition extends v1.PodCondition {
  /** The pod's `metadata.generation` the condition was set from. */
  observedGeneration?: number;
}

/**
 * One extended resource request a DRA claim serves (v1.34).
 * @public
 */
export interface ContainerExtendedResourceRequest {
  containerName: string;
  requestName: string;
  resourceName: string;
}

/**
 * The ResourceClaim made for a pod's extended resources (v1.34, DRAExtendedResource alpha).
 * @public
 */
export interface PodExtendedResourceClaimStatus {
  requestMappings: ContainerExtendedResourceRequest[];
  resourceClaimName: string;
}

/**
 * A pod's status, with `observedGeneration` (v1.33) and `extendedResourceClaimStatus` (v1.34).
 * @public
 */
export interface PodStatus
  extends Omit<
    v1.PodStatus,
    'conditions' | 'containerStatuses' | 'ephemeralContainerStatuses' | 'initContainerStatuses'
  > {
  conditions?: PodCondition[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  extendedResourceClaimStatus?: PodExtendedResourceClaimStatus;
  initContainerStatuses?: ContainerStatus[];
  /** The pod's `metadata.generation` the kubelet last reported status for. */
  observedGeneration?: number;
}

/**
 * A pod (core/v1), with the v1.34 spec and status.
 * @public
 */
export interface Pod extends Omit<v1.Pod, 'spec' | 'status'> {
  spec?: PodSpec;
  /** Read-only for clients; the kubelet writes it through the status subresource. */
  readonly status?: PodStatus;
}

/**
 * A list of pods.
 * @public
 */
export interface PodList extends Omit<v1.PodList, 'items'> {
  items: Pod[];
}
