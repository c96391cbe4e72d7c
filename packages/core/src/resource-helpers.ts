// Upstream k8s.io/component-helpers/resource (helpers.go): a pod's resources as one list, so
// every manager (cgroups, emptyDir tmpfs sizes, eviction) sums them the same way.

import type { Quantity } from 'kubernetes-types/api/resource.js';
import type { Container, Pod } from './core-v1.js';
import { isRestartableInitContainer } from './pod-helpers.js';
import { parseQuantity } from './quantity.js';

/**
 * Which list of the pod a container is in, as {@link PodResourcesOptions.containerFn} is told.
 * @public
 */
export type ContainerType = 'containers' | 'initContainers';

/**
 * Options of {@link podLimits} (upstream `PodResourcesOptions`).
 * @public
 */
export interface PodResourcesOptions {
  /** Called with each container's own list (limits), e.g. to see whether every container sets one. */
  readonly containerFn?: (list: Readonly<Record<string, Quantity>>, type: ContainerType) => void;
  /** Ignore `spec.resources` (upstream: the PodLevelResources gate off). */
  readonly skipPodLevelResources?: boolean;
  /** Leave `spec.overhead` out. */
  readonly excludeOverhead?: boolean;
}

/** The resources a pod may set at pod level in v1.34 (upstream `supportedPodLevelResources`). */
const supportedPodLevelResources: ReadonlySet<string> = new Set(['cpu', 'memory']);

/**
 * Whether `name` may be set in a pod's `spec.resources` (upstream `IsSupportedPodLevelResource`).
 * @public
 */
export function isSupportedPodLevelResource(name: string): boolean {
  return supportedPodLevelResources.has(name);
}

function hasSupported(list: Readonly<Record<string, Quantity>> | undefined): boolean {
  return Object.keys(list ?? {}).some(isSupportedPodLevelResource);
}

/**
 * Whether the pod sets a supported resource at pod level, as a request or a limit (upstream
 * `IsPodLevelResourcesSet`).
 * @public
 */
export function isPodLevelResourcesSet(pod: Pod): boolean {
  const r = pod.spec?.resources;
  return hasSupported(r?.requests) || hasSupported(r?.limits);
}

/**
 * Whether the pod sets a supported resource limit at pod level (upstream `IsPodLevelLimitsSet`).
 * @public
 */
export function isPodLevelLimitsSet(pod: Pod): boolean {
  return hasSupported(pod.spec?.resources?.limits);
}

type Amounts = Record<string, number>;

function addInto(into: Amounts, list: Readonly<Record<string, Quantity>> | undefined): void {
  for (const [name, q] of Object.entries(list ?? {})) into[name] = (into[name] ?? 0) + parseQuantity(q);
}

function maxInto(into: Amounts, from: Amounts): void {
  for (const [name, v] of Object.entries(from))
    if (into[name] === undefined || v > (into[name] ?? 0)) into[name] = v;
}

function limitsOf(c: Container): Readonly<Record<string, Quantity>> {
  return c.resources?.limits ?? {};
}

/**
 * Upstream `AggregateContainerLimits`: regular containers and sidecars summed, or, if larger
 * per resource, an init container plus the sidecars started before it.
 */
function aggregateContainerLimits(pod: Pod, options: PodResourcesOptions): Amounts {
  const limits: Amounts = {};
  for (const c of pod.spec?.containers ?? []) {
    const list = limitsOf(c);
    options.containerFn?.(list, 'containers');
    addInto(limits, list);
  }
  const sidecars: Amounts = {};
  const initMax: Amounts = {};
  for (const c of pod.spec?.initContainers ?? []) {
    const list = limitsOf(c);
    options.containerFn?.(list, 'initContainers');
    if (isRestartableInitContainer(c)) {
      // A sidecar runs beside the regular containers and every init container after it.
      addInto(limits, list);
      addInto(sidecars, list);
      maxInto(initMax, sidecars);
    } else {
      const one: Amounts = {};
      addInto(one, list);
      for (const [name, v] of Object.entries(sidecars)) one[name] = (one[name] ?? 0) + v;
      maxInto(initMax, one);
    }
  }
  maxInto(limits, initMax);
  return limits;
}

/**
 * The pod's limits as one list (upstream `PodLimits`), in the units of {@link parseQuantity}
 * (bytes, cores): the containers' aggregate, a supported pod-level limit in place of it, then the
 * overhead added to each resource that has a limit. A resource no container limits is absent.
 * @public
 */
export function podLimits(pod: Pod, options: PodResourcesOptions = {}): Record<string, number> {
  const limits = aggregateContainerLimits(pod, options);
  if (!options.skipPodLevelResources && isPodLevelLimitsSet(pod)) {
    for (const [name, q] of Object.entries(pod.spec?.resources?.limits ?? {})) {
      if (isSupportedPodLevelResource(name)) limits[name] = parseQuantity(q);
    }
  }
  if (!options.excludeOverhead) {
    for (const [name, q] of Object.entries(pod.spec?.overhead ?? {})) {
      const v = limits[name];
      if (v !== undefined) limits[name] = v + parseQuantity(q);
    }
  }
  return limits;
}
