import path from 'node:path';
import type { Pod, Volume, VolumeProjection } from '@kubelet-kit/core';
import { configMapData } from './configmap.js';
import { collectDownwardAPIData } from './downward-api.js';
import {
  DEFAULT_PROJECTION_MODE,
  makeKeyedPayload,
  type Payload,
  ProjectionPlugin,
  throwAggregate,
} from './projection.js';
import { secretData } from './secret.js';
import { VolumeSetUpError } from './volume-plugin.js';

/** `<root>/pods/<uid>/volumes/<plugin>/<volume>` → `<uid>`; undefined for another layout. */
function podUidOfVolumeDir(podVolumeDir: string): string | undefined {
  const parts = path.resolve(podVolumeDir).split(path.sep);
  const i = parts.length - 4;
  return i > 0 && parts[i + 1] === 'volumes' && parts[i - 1] === 'pods' ? parts[i] : undefined;
}

/**
 * The plugin name of projected volumes.
 *
 * @public
 */
export const PROJECTED_PLUGIN_NAME = 'kubernetes.io/projected';

/**
 * projected volumes (upstream `pkg/volume/projected`): secrets, configMaps, downward API items
 * and service account tokens in one directory, written in one atomic step; a later source
 * overwrites an earlier one's path. Kept on tmpfs, as upstream.
 *
 * @public
 */
export class ProjectedPlugin extends ProjectionPlugin {
  readonly name = PROJECTED_PLUGIN_NAME;
  protected readonly memoryBacked = true;

  canSupport(volume: Volume): boolean {
    return volume.projected !== undefined;
  }

  protected async makePayload(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<Payload> {
    const source = volume.projected ?? {};
    const defaultMode = source.defaultMode ?? DEFAULT_PROJECTION_MODE;
    const namespace = pod.metadata?.namespace ?? 'default';
    const payload: Payload = new Map();
    // As upstream's collectData, a failing source does not stop the others; the errors are
    // reported together once every source was tried.
    const errors: unknown[] = [];
    for (const s of source.sources ?? []) {
      signal?.throwIfAborted();
      try {
        for (const [k, v] of await this.#collectSource(s, pod, defaultMode, namespace, signal))
          payload.set(k, v);
      } catch (err) {
        errors.push(err);
      }
    }
    throwAggregate(errors);
    return payload;
  }

  /** One source's part of the payload; empty for a missing optional object. */
  async #collectSource(
    s: VolumeProjection,
    pod: Pod,
    defaultMode: number,
    namespace: string,
    signal?: AbortSignal,
  ): Promise<Payload> {
    if (s.secret) {
      const getter = this.#getter();
      const name = s.secret.name ?? '';
      const optional = s.secret.optional === true;
      const secret = await getter.getSecret(namespace, name, signal);
      if (!secret) {
        if (optional) return new Map();
        throw new VolumeSetUpError('FailedMount', `secrets ${JSON.stringify(name)} not found`);
      }
      return makeKeyedPayload('secret', secretData(secret), s.secret.items, defaultMode, optional);
    }
    if (s.configMap) {
      const getter = this.#getter();
      const name = s.configMap.name ?? '';
      const optional = s.configMap.optional === true;
      const cm = await getter.getConfigMap(namespace, name, signal);
      if (!cm) {
        if (optional) return new Map();
        throw new VolumeSetUpError('FailedMount', `configmaps ${JSON.stringify(name)} not found`);
      }
      return makeKeyedPayload('configmap', configMapData(cm), s.configMap.items, defaultMode, optional);
    }
    if (s.downwardAPI) {
      return collectDownwardAPIData(s.downwardAPI.items ?? [], pod, this.host.nodeAllocatable(), defaultMode);
    }
    if (s.serviceAccountToken) {
      const tokenGetter = this.host.tokenGetter;
      if (!tokenGetter) {
        throw new VolumeSetUpError('FailedMount', 'serviceAccountToken projection needs a token getter');
      }
      // No audience asks for the API server's own (upstream passes a nil list).
      const audience = s.serviceAccountToken.audience;
      const { status } = await tokenGetter.getServiceAccountToken(
        namespace,
        pod.spec?.serviceAccountName ?? 'default',
        {
          audiences: audience ? [audience] : [],
          expirationSeconds: s.serviceAccountToken.expirationSeconds ?? 3600,
          boundObjectRef: {
            kind: 'Pod',
            apiVersion: 'v1',
            name: pod.metadata?.name ?? '',
            uid: pod.metadata?.uid ?? '',
          },
        },
        signal,
      );
      const token = status.token;
      // With an fsGroup the token starts private; the ownership change then adds group read
      // (0600 → 0640) instead of leaving it readable by everyone.
      const fsGroupSet = pod.spec?.securityContext?.fsGroup !== undefined;
      return new Map([[s.serviceAccountToken.path, { data: token, mode: fsGroupSet ? 0o600 : defaultMode }]]);
    }
    if (s.clusterTrustBundle) {
      throw new VolumeSetUpError('FailedMount', 'clusterTrustBundle projections are not supported');
    }
    if (s.podCertificate) {
      throw new VolumeSetUpError('FailedMount', 'podCertificate projections are not supported');
    }
    return new Map();
  }

  /** As upstream's projected TearDown: the pod's tokens are forgotten with its volume. */
  override async tearDown(podVolumeDir: string, signal?: AbortSignal): Promise<void> {
    await super.tearDown(podVolumeDir, signal);
    const uid = podUidOfVolumeDir(podVolumeDir);
    if (uid) this.host.tokenGetter?.deleteServiceAccountToken(uid);
  }

  #getter() {
    const getter = this.host.objectGetter;
    if (!getter)
      throw new VolumeSetUpError('FailedMount', 'no object getter configured for projected volumes');
    return getter;
  }
}
