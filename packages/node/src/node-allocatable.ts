import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NodeAllocatable } from '@kubelet-kit/core';

/** Options of {@link nodeAllocatable}: the agent's flags about what the node offers. */
export interface NodeAllocatableOptions {
  readonly rootDirectory: string;
  /** Upstream --max-pods; default 110. */
  readonly maxPods?: number | undefined;
  /** Allocatable ephemeral storage, bytes; default the root directory's filesystem less 10 %. */
  readonly ephemeralStorageBytes?: number | undefined;
  /** Extended resources the node offers, laid over the hugepages. */
  readonly extendedResources?: Readonly<Record<string, number>> | undefined;
  /** Default /sys/kernel/mm/hugepages. */
  readonly hugePagesDirectory?: string | undefined;
}

/**
 * What pods may request of this node: the host's cores and memory (no reservation taken off),
 * `maxPods`, ephemeral storage and the scalar resources (hugepages, extended resources).
 *
 * @internal
 */
export function nodeAllocatable(options: NodeAllocatableOptions): NodeAllocatable {
  return {
    cpu: os.cpus().length,
    memory: os.totalmem(),
    pods: options.maxPods ?? 110,
    ephemeralStorage: options.ephemeralStorageBytes ?? nodeEphemeralStorage(options.rootDirectory),
    scalarResources: { ...hugePages(options.hugePagesDirectory), ...options.extendedResources },
  };
}

/**
 * Upstream's allocatable ephemeral storage: the capacity of the filesystem holding the root
 * directory less the default hard eviction threshold (nodefs.available < 10 %).
 *
 * @internal
 */
export function nodeEphemeralStorage(rootDirectory: string): number {
  // The root directory may not exist yet: its nearest existing ancestor is on the same filesystem.
  let dir = rootDirectory;
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const st = fs.statfsSync(dir);
  const capacity = st.blocks * st.bsize;
  return capacity - Math.floor(capacity * 0.1);
}

/**
 * `hugepages-<size>` capacity in bytes from `dir` (/sys/kernel/mm/hugepages), as cadvisor
 * reports it.
 *
 * @internal
 */
export function hugePages(dir = '/sys/kernel/mm/hugepages'): Record<string, number> {
  const out: Record<string, number> = {};
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const m = /^hugepages-(\d+)kB$/.exec(e);
    if (!m) continue;
    const kib = Number(m[1]);
    let pages = 0;
    try {
      pages = Number(fs.readFileSync(path.join(dir, e, 'nr_hugepages'), 'utf8').trim()) || 0;
    } catch {
      // Unreadable: none of that size.
    }
    const size =
      kib % 1048576 === 0 ? `${kib / 1048576}Gi` : kib % 1024 === 0 ? `${kib / 1024}Mi` : `${kib}Ki`;
    out[`hugepages-${size}`] = pages * kib * 1024;
  }
  return out;
}
