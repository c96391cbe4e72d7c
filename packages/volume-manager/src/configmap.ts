import type { ConfigMap, Pod, Volume } from '@kubelet-kit/core';
import {
  base64Get,
  type KeyedData,
  objectVolumePayload,
  ownValue,
  type Payload,
  ProjectionPlugin,
} from './projection.js';

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

  protected makePayload(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<Payload> {
    const source = volume.configMap ?? {};
    const name = source.name ?? '';
    return objectVolumePayload({
      what: 'configmap',
      volumeType: 'configMap',
      name,
      optional: source.optional === true,
      items: source.items,
      defaultMode: source.defaultMode,
      getter: this.host.objectGetter,
      read: (getter) => getter.getConfigMap(pod.metadata?.namespace ?? 'default', name, signal),
      data: configMapData,
    });
  }
}
