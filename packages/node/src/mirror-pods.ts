import type { MirrorClient } from '@kubelet-kit/core';
import { getPodFullName, isStaticPod, type Logger, type Pod } from '@kubelet-kit/core';
import { isMirrorPodOf, type PodManager } from '@kubelet-kit/pod-manager';
import type { PodWorkers } from '@kubelet-kit/pod-workers';

/**
 * Upstream `tryReconcileMirrorPods` (kubelet.go, on every sync of a static pod): the static pod
 * has a mirror pod on the API server that matches it. One that is being deleted or mirrors
 * another version of the pod is deleted and made again. Failures are logged; the next sync
 * tries again.
 *
 * @internal
 */
export async function tryReconcileMirrorPods(
  client: MirrorClient,
  log: Logger,
  staticPod: Pod,
  mirrorPod: Pod | undefined,
): Promise<void> {
  if (!isStaticPod(staticPod)) return;
  const fullName = getPodFullName(staticPod);
  let deleted = false;
  if (mirrorPod && (mirrorPod.metadata?.deletionTimestamp || !isMirrorPodOf(mirrorPod, staticPod))) {
    log.info(
      { pod: fullName, mirrorPodUid: mirrorPod.metadata?.uid },
      'deleting a mirror pod that does not match its static pod',
    );
    deleted = await client.deleteMirrorPod(fullName, mirrorPod.metadata?.uid).catch((err: unknown) => {
      log.error({ pod: fullName, err: String(err) }, 'failed deleting mirror pod');
      return false;
    });
  }
  if (mirrorPod && !deleted) return;
  await client
    .createMirrorPod(staticPod)
    .catch((err: unknown) => log.error({ pod: fullName, err: String(err) }, 'failed creating a mirror pod'));
}

/**
 * Upstream `deleteOrphanedMirrorPods` (kubelet_pods.go, in housekeeping): mirror pods whose
 * static pod is gone, unless that static pod is still stopping.
 *
 * @internal
 */
export async function deleteOrphanedMirrorPods(
  client: MirrorClient,
  log: Logger,
  podManager: Pick<PodManager, 'getPodsAndMirrorPods'>,
  podWorkers: Pick<PodWorkers, 'isPodForMirrorPodTerminatingByFullName'>,
): Promise<void> {
  for (const fullName of podManager.getPodsAndMirrorPods().orphanedMirrorPodFullnames) {
    if (podWorkers.isPodForMirrorPodTerminatingByFullName(fullName)) continue;
    await client
      .deleteMirrorPod(fullName, undefined)
      .catch((err: unknown) => log.error({ pod: fullName, err: String(err) }, 'failed deleting mirror pod'));
  }
}
