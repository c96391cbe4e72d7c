import type { Node, NodeStatus, Taint } from '@kubelet-kit/core';
import { quantityValue } from '@kubelet-kit/core';
import { isExtendedResourceName, isHugePageResourceName } from './resources.js';

// The pure parts of upstream kubelet_node_status.go's registration: the Node the kubelet would
// create, and how an existing Node is brought in line with it.

/** The labels the kubelet owns on its Node and keeps in line (upstream's `defaultLabels` list). @public */
export const defaultNodeLabels: readonly string[] = [
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
];

/** Tells the attach/detach controller to attach this node's volumes (upstream's default, true). @public */
export const controllerManagedAttachDetachAnnotation =
  'volumes.kubernetes.io/controller-managed-attach-detach';

/** Options of {@link initialNodeObject}. @public */
export interface InitialNodeOptions {
  readonly nodeName: string;
  /** The Node's labels: the defaults (hostname, os, arch) with `--node-labels` over them. */
  readonly labels: Readonly<Record<string, string>>;
  /** `--register-with-taints`. */
  readonly taints?: readonly Taint[];
  /** `--register-schedulable=false` (deprecated upstream): unschedulable and tainted so. */
  readonly unschedulable?: boolean;
  /** `--enable-controller-attach-detach`; default true. */
  readonly controllerAttachDetach?: boolean;
}

/**
 * The Node's metadata and spec as upstream `initialNode` builds them, before the status setters
 * fill its status.
 *
 * @public
 */
export function initialNodeObject(options: InitialNodeOptions): Node {
  const taints: Taint[] = (options.taints ?? []).map((t) => ({ ...t }));
  const unschedulableTaint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
  // Tainted at creation, so no pod lands on it between registration and the taint controller.
  if (
    options.unschedulable &&
    !taints.some((t) => t.key === unschedulableTaint.key && t.effect === 'NoSchedule')
  ) {
    taints.push(unschedulableTaint);
  }
  const node: Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: options.nodeName, labels: { ...options.labels } },
    spec: { ...(options.unschedulable ? { unschedulable: true } : {}), ...(taints.length ? { taints } : {}) },
  };
  if (options.controllerAttachDetach ?? true) {
    node.metadata!.annotations = { [controllerManagedAttachDetachAnnotation]: 'true' };
  }
  return node;
}

/**
 * Upstream `reconcileCMADAnnotationWithExistingNode`: the attach/detach annotation of the
 * existing Node follows the initial Node's. True when `existing` changed.
 *
 * @public
 */
export function reconcileCMADAnnotation(initial: Node, existing: Node): boolean {
  const want = initial.metadata?.annotations?.[controllerManagedAttachDetachAnnotation] === 'true';
  const have = existing.metadata?.annotations?.[controllerManagedAttachDetachAnnotation] === 'true';
  if (want === have) return false;
  existing.metadata ??= {};
  if (want) {
    existing.metadata.annotations = {
      ...existing.metadata.annotations,
      [controllerManagedAttachDetachAnnotation]: 'true',
    };
  } else if (existing.metadata.annotations) {
    delete existing.metadata.annotations[controllerManagedAttachDetachAnnotation];
  }
  return true;
}

/**
 * Upstream `updateDefaultLabels`: each of the kubelet's own labels takes the initial Node's
 * value, or goes when the initial Node lacks it. Other labels are left alone. True when changed.
 *
 * @public
 */
export function updateDefaultLabels(initial: Node, existing: Node): boolean {
  let needsUpdate = false;
  existing.metadata ??= {};
  const labels: Record<string, string> = { ...existing.metadata.labels };
  const want = initial.metadata?.labels ?? {};
  for (const key of defaultNodeLabels) {
    if (key in want) {
      if (labels[key] !== want[key]) {
        labels[key] = want[key]!;
        needsUpdate = true;
      }
    } else if (key in labels) {
      delete labels[key];
      needsUpdate = true;
    }
  }
  if (needsUpdate) existing.metadata.labels = labels;
  return needsUpdate;
}

/** Upstream `updateDefaultResources`: capacity / allocatable taken whole when the existing Node has none. */
export function updateDefaultResources(initial: Node, existing: Node): boolean {
  let requiresUpdate = false;
  const e = existing as { status?: NodeStatus };
  e.status ??= {};
  const s = e.status;
  if (s.capacity === undefined && initial.status?.capacity !== undefined) {
    s.capacity = { ...initial.status.capacity };
    requiresUpdate = true;
  }
  if (s.allocatable === undefined && initial.status?.allocatable !== undefined) {
    s.allocatable = { ...initial.status.allocatable };
    requiresUpdate = true;
  }
  return requiresUpdate;
}

/**
 * Upstream `reconcileExtendedResource`: with `resetExtendedResources` (upstream: the device
 * manager lost its checkpoint, the node was recreated) extended resources are zeroed until
 * offered again. True when `existing` changed.
 *
 * @public
 */
export function reconcileExtendedResource(
  initial: Node,
  existing: Node,
  resetExtendedResources = false,
): boolean {
  let requiresUpdate = updateDefaultResources(initial, existing);
  if (!resetExtendedResources) return requiresUpdate;
  const s = existing.status!;
  for (const k of Object.keys(s.capacity ?? {})) {
    if (!isExtendedResourceName(k)) continue;
    s.capacity = { ...s.capacity, [k]: '0' };
    s.allocatable = { ...s.allocatable, [k]: '0' };
    requiresUpdate = true;
  }
  return requiresUpdate;
}

/**
 * Upstream `reconcileHugePageResource`: hugepage sizes of the initial Node are set (added or
 * changed), sizes the machine no longer has are removed. True when `existing` changed.
 *
 * @public
 */
export function reconcileHugePageResource(initial: Node, existing: Node): boolean {
  let requiresUpdate = updateDefaultResources(initial, existing);
  const s = existing.status!;
  const capacity: Record<string, string> = { ...s.capacity };
  const allocatable: Record<string, string> = { ...s.allocatable };
  const supported = new Set<string>();
  const initialCapacity = initial.status?.capacity ?? {};
  const initialAllocatable = initial.status?.allocatable ?? {};
  for (const [name, want] of Object.entries(initialCapacity)) {
    if (!isHugePageResourceName(name)) continue;
    supported.add(name);
    const known = name in capacity;
    if (!known || quantityValue(capacity[name]!) !== quantityValue(want)) {
      capacity[name] = want;
      requiresUpdate = true;
    }
    const wantAllocatable = initialAllocatable[name] ?? '0';
    if (!known || quantityValue(allocatable[name] ?? '0') !== quantityValue(wantAllocatable)) {
      allocatable[name] = wantAllocatable;
      requiresUpdate = true;
    }
  }
  for (const name of Object.keys(capacity)) {
    if (isHugePageResourceName(name) && !supported.has(name)) {
      delete capacity[name];
      delete allocatable[name];
      requiresUpdate = true;
    }
  }
  s.capacity = capacity;
  s.allocatable = allocatable;
  return requiresUpdate;
}
