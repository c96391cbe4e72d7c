import type { ConfigMap, Pod, Volume } from '@kubelet-kit/core';
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
 * The plugin name of configMap volumes.
 *
 * @public
 */
export const CONFIGMAP_PLUGIN_NAME = 'kubernetes.io/configmap';

/**
 * A ConfigMap's `data` then `binaryData`, as the payload sees them.
 *
 * @public
 */
export function configMapData(cm: ConfigMap): KeyedData {
  return {
    get: (key) => ownValue(cm.data, key) ?? base64Get(cm.binaryData, key),
    keys: () => [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})],
  };
}

/**
 * configMap volumes (upstream `pkg/volume/configmap`).
 *
 * @public
 */
export class ConfigMapPlugin extends ProjectionPlugin {
  readonly name = CONFIGMAP_PLUGIN_NAME;
  protected readonly memoryBacked = false;

  canSupport(volume: Volume): boolean {
    return volume.configMap !== undefined;
  }

  protected async makePayload(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<Payload> {
    const source = volume.configMap ?? {};
    const optional = source.optional === true;
    const getter = this.host.objectGetter;
    if (!getter)
      throw new VolumeSetUpError('FailedMount', 'no object getter configured for configMap volumes');
    const name = source.name ?? '';
    const cm = await getter.getConfigMap(pod.metadata?.namespace ?? 'default', name, signal);
    if (!cm) {
      if (!optional)
        throw new VolumeSetUpError('FailedMount', `configmaps ${JSON.stringify(name)} not found`);
      return new Map();
    }
    return makeKeyedPayload(
      'configmap',
      configMapData(cm),
      source.items,
      source.defaultMode ?? DEFAULT_PROJECTION_MODE,
      optional,
    );
  }
}
