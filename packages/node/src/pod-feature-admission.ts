import fs from 'node:fs';
import type { Pod } from '@kubelet-kit/core';
import { SupplementalGroupsPolicy } from '@kubelet-kit/cri';
import { supplementalGroupsPolicyOf, validateAppArmor } from '@kubelet-kit/kuberuntime';
import type { PodAdmitResult } from './admission.js';

// Admission of pods whose security fields the node must be able to honour, or refuse: upstream's
// SupplementalGroupsPolicy check (lifecycle/predicate.go) and AppArmor admit handler
// (lifecycle/handlers.go over pkg/security/apparmor). A field the node cannot enforce never runs
// weaker than asked.

/**
 * What the node can enforce, as admission (`admitPodFeatures`) needs to know it.
 *
 * @public
 */
export interface PodFeatureSupport {
  /** Why AppArmor cannot be enforced on this host; undefined when it can (see {@link appArmorHostError}). */
  readonly appArmorHostError: string | undefined;
  /** Whether the runtime reports `features.supplemental_groups_policy` (read at each status check). */
  readonly supplementalGroupsPolicy: () => boolean;
}

/**
 * The paths runc's `apparmor.IsEnabled` reads.
 *
 * @public
 */
export interface AppArmorHostPaths {
  readonly securityfs: string;
  readonly enabled: string;
}

const defaultAppArmorPaths: AppArmorHostPaths = {
  securityfs: '/sys/kernel/security/apparmor',
  enabled: '/sys/module/apparmor/parameters/enabled',
};

/**
 * Upstream `validateHost`, checked once at startup as upstream does: AppArmor is enabled when
 * the kernel exposes it in securityfs and its module parameter `enabled` reads `Y`.
 *
 * @public
 */
export function appArmorHostError(paths: AppArmorHostPaths = defaultAppArmorPaths): string | undefined {
  if (process.platform !== 'linux') return 'binary not compiled for linux';
  let enabled = false;
  try {
    fs.statSync(paths.securityfs);
    enabled = fs.readFileSync(paths.enabled, 'utf8').startsWith('Y');
  } catch {
    enabled = false;
  }
  return enabled ? undefined : 'AppArmor is not enabled on the host';
}

/**
 * Refuses a pod the node cannot run as asked: `supplementalGroupsPolicy: Strict` without the
 * runtime's support (reason `SupplementalGroupsPolicyNotSupported`), or an AppArmor profile the
 * host cannot enforce (reason `AppArmor`). Undefined when the pod may run.
 */
export function admitPodFeatures(pod: Pod, support: PodFeatureSupport): PodAdmitResult | undefined {
  let policy: SupplementalGroupsPolicy | undefined;
  try {
    policy = supplementalGroupsPolicyOf(pod);
  } catch (err) {
    return {
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: `spec.securityContext.supplementalGroupsPolicy: ${(err as Error).message}`,
    };
  }
  if (policy === SupplementalGroupsPolicy.Strict && !support.supplementalGroupsPolicy()) {
    return {
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    };
  }
  // Upstream checks only Pending pods, which skips static pods (they have no phase): a pod not
  // yet running is checked here whatever its source.
  const phase = pod.status?.phase;
  if (phase === undefined || phase === '' || phase === 'Pending') {
    const err = validateAppArmor(pod, support.appArmorHostError);
    if (err !== undefined) {
      return { admit: false, reason: 'AppArmor', message: `Cannot enforce AppArmor: ${err}` };
    }
  }
  return undefined;
}
