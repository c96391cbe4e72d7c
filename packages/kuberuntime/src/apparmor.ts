import type { AppArmorProfile, Container, Pod } from '@kubelet-kit/core';
import { type PartialMessage, type SecurityProfile, SecurityProfile_ProfileType } from '@kubelet-kit/cri';

// AppArmor profiles of a pod's containers (upstream `pkg/security/apparmor/helpers.go` and
// `getAppArmorProfile` in `kuberuntime_container_linux.go`).

/** The deprecated per-container annotation: `container.apparmor.security.beta.kubernetes.io/<name>`. */
export const deprecatedAppArmorAnnotationKeyPrefix = 'container.apparmor.security.beta.kubernetes.io/';
const annotationRuntimeDefault = 'runtime/default';
const annotationUnconfined = 'unconfined';
const annotationLocalhostPrefix = 'localhost/';

type Containers = readonly Container[];

function allContainers(pod: Pod): Containers {
  return [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
    ...((pod.spec?.ephemeralContainers ?? []) as Containers),
  ];
}

function profileFromAnnotation(pod: Pod, containerName: string): AppArmorProfile | undefined {
  const value = pod.metadata?.annotations?.[deprecatedAppArmorAnnotationKeyPrefix + containerName];
  if (value === undefined) return undefined;
  if (value === annotationRuntimeDefault) return { type: 'RuntimeDefault' };
  if (value === annotationUnconfined) return { type: 'Unconfined' };
  if (value.startsWith(annotationLocalhostPrefix)) {
    return { type: 'Localhost', localhostProfile: value.slice(annotationLocalhostPrefix.length) };
  }
  // An invalid annotation names no profile.
  return undefined;
}

/**
 * The container's AppArmor profile (upstream `GetProfile`): its own field, else the deprecated
 * annotation (static pods keep those unsynced to fields), else the pod's field.
 */
export function getAppArmorProfile(pod: Pod, container: Container): AppArmorProfile | undefined {
  return (
    container.securityContext?.appArmorProfile ??
    profileFromAnnotation(pod, container.name) ??
    pod.spec?.securityContext?.appArmorProfile ??
    undefined
  );
}

/** Whether the pod asks for any AppArmor profile other than Unconfined (upstream `isRequired`). */
export function isAppArmorRequired(pod: Pod): boolean {
  const pp = pod.spec?.securityContext?.appArmorProfile;
  if (pp && pp.type !== 'Unconfined') return true;
  for (const c of allContainers(pod)) {
    const cp = c.securityContext?.appArmorProfile;
    if (cp && cp.type !== 'Unconfined') return true;
  }
  for (const [key, value] of Object.entries(pod.metadata?.annotations ?? {})) {
    if (key.startsWith(deprecatedAppArmorAnnotationKeyPrefix) && value !== annotationUnconfined) return true;
  }
  return false;
}

/**
 * Upstream `apparmor.Validator.Validate`: a pod that needs AppArmor needs it on the host
 * (`hostError` says why not, when it is not), and a Localhost profile needs a name. Returns
 * the error message, or undefined when the pod can run.
 * @internal
 */
export function validateAppArmor(pod: Pod, hostError: string | undefined): string | undefined {
  if (!isAppArmorRequired(pod)) return undefined;
  if (hostError !== undefined) return hostError;
  for (const c of allContainers(pod)) {
    const profile = getAppArmorProfile(pod, c);
    if (profile?.type === 'Localhost' && !profile.localhostProfile?.trim()) {
      return `invalid empty AppArmor profile name: ${JSON.stringify(profile)}`;
    }
  }
  return undefined;
}

/** The container's AppArmor profile in CRI form, with the deprecated string for older runtimes. */
export interface RuntimeAppArmorProfile {
  readonly apparmor: PartialMessage<SecurityProfile>;
  readonly apparmorProfile: string;
}

/** Upstream `getAppArmorProfile` of the runtime manager; undefined: the runtime decides. */
export function runtimeAppArmorProfile(pod: Pod, container: Container): RuntimeAppArmorProfile | undefined {
  const profile = getAppArmorProfile(pod, container);
  if (!profile) return undefined;
  switch (profile.type) {
    case 'RuntimeDefault':
      return {
        apparmor: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
        apparmorProfile: annotationRuntimeDefault,
      };
    case 'Unconfined':
      return {
        apparmor: { profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '' },
        apparmorProfile: annotationUnconfined,
      };
    case 'Localhost':
      if (profile.localhostProfile === undefined || profile.localhostProfile === null)
        throw new Error('missing localhost apparmor profile name');
      return {
        apparmor: {
          profileType: SecurityProfile_ProfileType.Localhost,
          localhostRef: profile.localhostProfile,
        },
        apparmorProfile: annotationLocalhostPrefix + profile.localhostProfile,
      };
    default:
      throw new Error(`unknown apparmor profile type: ${JSON.stringify(profile.type)}`);
  }
}
