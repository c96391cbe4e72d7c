import type { Pod, Secret, Volume } from '@kubelet-kit/core';
import {
  base64Get,
  type KeyedData,
  objectVolumePayload,
  ownValue,
  type Payload,
  ProjectionPlugin,
} from './projection.js';

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

  protected makePayload(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<Payload> {
    const source = volume.secret ?? {};
    const name = source.secretName ?? '';
    return objectVolumePayload({
      what: 'secret',
      volumeType: 'secret',
      name,
      optional: source.optional === true,
      items: source.items,
      defaultMode: source.defaultMode,
      getter: this.host.objectGetter,
      read: (getter) => getter.getSecret(pod.metadata?.namespace ?? 'default', name, signal),
      data: secretData,
    });
  }
}
