import {
  type Container,
  type DownwardAPIVolumeFile,
  type NodeAllocatable,
  type Pod,
  parseQuantity,
  quantityMilliValue,
  type ResourceFieldSelector,
  type Volume,
} from '@kubelet-kit/core';
import {
  DEFAULT_PROJECTION_MODE,
  ownValue,
  type Payload,
  ProjectionPlugin,
  throwAggregate,
} from './projection.js';

/**
 * The plugin name of downwardAPI volumes.
 *
 * @public
 */
export const DOWNWARD_API_PLUGIN_NAME = 'kubernetes.io/downward-api';

/**
 * `key="value"` lines sorted by key, without a final newline (upstream `fieldpath.FormatMap`).
 *
 * @public
 */
export function formatMap(map: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map?.[k] ?? '')}`)
    .join('\n');
}

const subscript = /^metadata\.(labels|annotations)\['(.+)'\]$/;

/**
 * The value of a downward API field path of the pod's metadata (upstream `ExtractFieldPathAsString`).
 *
 * @public
 */
export function extractFieldPathAsString(pod: Pod, fieldPath: string): string {
  const meta = pod.metadata ?? {};
  const sub = subscript.exec(fieldPath);
  if (sub) {
    const map = sub[1] === 'labels' ? meta.labels : meta.annotations;
    return ownValue(map, sub[2] ?? '') ?? '';
  }
  switch (fieldPath) {
    case 'metadata.labels':
      return formatMap(meta.labels);
    case 'metadata.annotations':
      return formatMap(meta.annotations);
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    default:
      throw new Error(`unsupported fieldPath: ${fieldPath}`);
  }
}

function findContainer(pod: Pod, name: string | undefined): Container {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const c = name ? all.find((x) => x.name === name) : pod.spec?.containers?.[0];
  if (!c) throw new Error(`container ${name ?? ''} not found`);
  return c;
}

/**
 * A container resource in units of the divisor, rounded up (upstream
 * `ExtractContainerResourceValue`); unset limits fall back to node allocatable.
 *
 * @public
 */
export function extractContainerResourceValue(
  selector: ResourceFieldSelector,
  container: Container,
  allocatable: NodeAllocatable,
): string {
  const divisor = selector.divisor === undefined ? 1 : parseQuantity(selector.divisor) || 1;
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  // A limit that is unset or zero takes node allocatable (upstream MergeContainerResourceLimits);
  // requests have no fallback (an unset one is 0).
  const cpu = (q: string | number | undefined, fallback = 0): string => {
    const milli = q === undefined || parseQuantity(q) === 0 ? fallback * 1000 : quantityMilliValue(q);
    return String(Math.ceil(milli / (divisor * 1000)));
  };
  const bytes = (q: string | number | undefined, fallback = 0): string => {
    const v = q === undefined || parseQuantity(q) === 0 ? fallback : Math.ceil(parseQuantity(q));
    return String(Math.ceil(v / divisor));
  };
  switch (selector.resource) {
    case 'limits.cpu':
      return cpu(limits.cpu, allocatable.cpu);
    case 'limits.memory':
      return bytes(limits.memory, allocatable.memory);
    case 'limits.ephemeral-storage':
      return bytes(limits['ephemeral-storage'], allocatable.ephemeralStorage ?? 0);
    case 'requests.cpu':
      return cpu(requests.cpu);
    case 'requests.memory':
      return bytes(requests.memory);
    case 'requests.ephemeral-storage':
      return bytes(requests['ephemeral-storage']);
    default:
      throw new Error(`unsupported container resource : ${selector.resource}`);
  }
}

/**
 * The payload of downward API items (upstream `downwardapi.CollectData`).
 *
 * @public
 */
export function collectDownwardAPIData(
  items: readonly DownwardAPIVolumeFile[],
  pod: Pod,
  allocatable: NodeAllocatable,
  defaultMode: number,
): Payload {
  const payload: Payload = new Map();
  const errors: unknown[] = [];
  for (const item of items) {
    const mode = item.mode ?? defaultMode;
    try {
      if (item.fieldRef) {
        payload.set(item.path, { data: extractFieldPathAsString(pod, item.fieldRef.fieldPath), mode });
      } else if (item.resourceFieldRef) {
        const container = findContainer(pod, item.resourceFieldRef.containerName);
        payload.set(item.path, {
          data: extractContainerResourceValue(item.resourceFieldRef, container, allocatable),
          mode,
        });
      }
    } catch (err) {
      errors.push(err);
    }
  }
  throwAggregate(errors);
  return payload;
}

/**
 * downwardAPI volumes (upstream `pkg/volume/downwardapi`).
 *
 * @public
 */
export class DownwardAPIPlugin extends ProjectionPlugin {
  readonly name = DOWNWARD_API_PLUGIN_NAME;
  // Upstream wraps a memory-medium emptyDir for downward API volumes, as for secrets.
  protected readonly memoryBacked = true;

  canSupport(volume: Volume): boolean {
    return volume.downwardAPI !== undefined;
  }

  protected async makePayload(pod: Pod, volume: Volume): Promise<Payload> {
    const source = volume.downwardAPI ?? {};
    return collectDownwardAPIData(
      source.items ?? [],
      pod,
      this.host.nodeAllocatable(),
      source.defaultMode ?? DEFAULT_PROJECTION_MODE,
    );
  }
}
