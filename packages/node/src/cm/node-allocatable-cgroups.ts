import fs from 'node:fs';
import os from 'node:os';
import { parseReservation } from '../node-status.js';
import type { NodeResourceAmounts } from './node-container-manager.js';

/**
 * The node's capacity (cores, memory, pid_max) and what kubepods is limited to with
 * --enforce-node-allocatable=pods: capacity less --system-reserved and --kube-reserved (upstream
 * `GetNodeAllocatableAbsolute`: the eviction threshold is not taken off the cgroup).
 *
 * @internal
 */
export function nodeCgroupAmounts(
  systemReserved: Readonly<Record<string, string>> | undefined,
  kubeReserved: Readonly<Record<string, string>> | undefined,
): { capacity: NodeResourceAmounts; allocatable: NodeResourceAmounts } {
  let pids: number | undefined;
  try {
    pids = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()) || undefined;
  } catch {}
  const capacity = { cpuMilli: os.cpus().length * 1000, memory: os.totalmem(), pids };
  const reserved: Record<string, number> = {};
  for (const r of [
    parseReservation('--system-reserved', systemReserved),
    parseReservation('--kube-reserved', kubeReserved),
  ]) {
    for (const [k, v] of Object.entries(r)) reserved[k] = (reserved[k] ?? 0) + v;
  }
  const less = (v: number, r: number | undefined) => Math.max(0, v - (r ?? 0));
  return {
    capacity,
    allocatable: {
      cpuMilli: less(capacity.cpuMilli, reserved.cpu),
      memory: less(capacity.memory, reserved.memory),
      pids: pids === undefined ? undefined : less(pids, reserved.pid),
    },
  };
}
