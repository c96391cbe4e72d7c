import type { Pod, Secret, Volume } from '@kubelet-kit/core';
import {
  base64Get,
  DEFAULT_PROJECTION_MODE,
  type KeyedData,
  makeKeyedPayload,
  ownValue,
  type Payload,
  ProjectionPlugin,
} from './projection.js';
import { VolumeSetUpError } from './volume-plugin.js';

/**
 * The plugin name of secret volumes.
 *
 * @public
 */
export const SECRET_PLUGIN_NAME = 'kubernetes.io/secret';

/**
 * A Secret's `data` (base64), with `stringData` for manifests that were never through an API server.
 *
 * @public
 */
export function secretData(secret: Secret): KeyedData {
  return {
    get: (key) => ownValue(secret.stringData, key) ?? base64Get(secret.data, key),
    keys: () => new Set([...Object.keys(secret.data ?? {}), ...Object.keys(secret.stringData ?? {})]),
  };
}

/**
 * secret volumes (upstream `pkg/volume/secret`), on tmpfs.
 *
 * @public
 */
export class SecretPlugin extends ProjectionPlugin {
  readonly name = SECRET_PLUGIN_NAME;
  protected readonly memoryBacked = true;

  canSupport(volume: Volume): boolean {
    return volume.secret !== undefined;
  }

  protected async makePayload(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<Payload> {
    const source = volume.secret ?? {};
    const optional = source.optional === true;
    const getter = this.host.objectGetter;
    if (!getter) throw new VolumeSetUpError('FailedMount', 'no object getter configured for secret volumes');
    const name = source.secretName ?? '';
    const secret = await getter.getSecret(pod.metadata?.namespace ?? 'default', name, signal);
    if (!secret) {
      if (!optional) throw new VolumeSetUpError('FailedMount', `secrets ${JSON.stringify(name)} not found`);
      return new Map();
    }
    return makeKeyedPayload(
      'secret',
      secretData(secret),
      source.items,
      source.defaultMode ?? DEFAULT_PROJECTION_MODE,
      optional,
    );
  }
}
