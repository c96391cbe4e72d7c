import fs from 'node:fs';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { NamespaceMode, type PartialMessage, type UserNamespace } from '@kubelet-kit/cri';

// User namespaces of pods (upstream `pkg/kubelet/userns`): hostUsers false gets the pod its own
// range of host IDs, recorded in `<pods>/<uid>/userns` so it survives a restart of the agent.

/** What the runtime says one of its handlers can do (CRI `Status().runtime_handlers`). @public */
export interface RuntimeHandlerInfo {
  /** "" is the runtime's default handler. */
  readonly name: string;
  readonly supportsUserNamespaces: boolean;
  readonly supportsRecursiveReadOnlyMounts: boolean;
}

/** Options of `UserNamespaceManager`. @public */
export interface UserNamespaceManagerOptions {
  /** `<rootDirectory>/pods`. */
  readonly podsDirectory: string;
  /** The first host ID pods may get (upstream's default without a `kubelet` subuid entry: 65536). */
  readonly firstId?: number;
  /** How many host IDs pods may get, from `firstId` (default: up to 2^32). */
  readonly length?: number;
  /** IDs per pod (upstream `userNamespaces.idsPerPod`, default 65536). */
  readonly idsPerPod?: number;
}

const mappingsFile = 'userns';

interface Mapping {
  readonly hostId: number;
  readonly containerId: number;
  readonly length: number;
}

interface MappingsRecord {
  readonly uidMappings: Mapping[];
  readonly gidMappings: Mapping[];
}

function readRecord(file: string): MappingsRecord | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const rec = JSON.parse(text) as Partial<MappingsRecord>;
  const uid = rec.uidMappings?.[0];
  const gid = rec.gidMappings?.[0];
  if (!uid || !gid || rec.uidMappings?.length !== 1 || rec.gidMappings?.length !== 1) {
    throw new Error(`invalid user namespace mappings in ${file}`);
  }
  if (uid.hostId !== gid.hostId || uid.length !== gid.length || uid.containerId !== 0) {
    throw new Error(`invalid user namespace mappings in ${file}: uid and gid mappings differ`);
  }
  return { uidMappings: [uid], gidMappings: [gid] };
}

/**
 * Upstream `UsernsManager.GetOrCreateUserNamespaceMappings`: hostUsers unset or true share the
 * node's user namespace; false needs a handler that supports user namespaces, and gets a range
 * no other pod on this node holds.
 */
export class UserNamespaceManager {
  readonly #podsDir: string;
  readonly #firstId: number;
  readonly #idsPerPod: number;
  readonly #blocks: number;

  constructor(options: UserNamespaceManagerOptions) {
    this.#podsDir = options.podsDirectory;
    this.#firstId = options.firstId ?? 65536;
    this.#idsPerPod = options.idsPerPod ?? 65536;
    const length = options.length ?? 2 ** 32 - this.#firstId;
    if (this.#firstId % this.#idsPerPod !== 0 || length % this.#idsPerPod !== 0) {
      throw new RangeError(`the user namespace range must be a multiple of ${this.#idsPerPod} IDs`);
    }
    this.#blocks = length / this.#idsPerPod;
  }

  /** The pod's CRI user namespace; throws when the pod's request cannot be met. */
  getOrCreateUserNamespaceMappings(
    pod: Pod,
    runtimeHandler: string,
    handlers: readonly RuntimeHandlerInfo[],
  ): PartialMessage<UserNamespace> {
    if (pod.spec?.hostUsers !== false) return { mode: NamespaceMode.NODE, uids: [], gids: [] };
    // Upstream's API validation forbids host namespaces beside a user namespace; pods from
    // files never met it.
    for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
      if (pod.spec[field]) throw new Error(`spec.${field}: Forbidden: when \`hostUsers\` is false`);
    }
    // Upstream `HandlerSupportsUserNamespaces`: a runtime that reports no handlers is too old.
    if (handlers.length > 0 && !handlers.some((h) => h.name === runtimeHandler)) {
      throw new Error(`the handler ${JSON.stringify(runtimeHandler)} is not known`);
    }
    if (!handlers.find((h) => h.name === runtimeHandler)?.supportsUserNamespaces) {
      throw new Error(
        `RuntimeClass handler ${JSON.stringify(runtimeHandler)} does not support user namespaces`,
      );
    }
    const uid = pod.metadata?.uid ?? '';
    const file = path.join(this.#podsDir, uid, mappingsFile);
    let rec = readRecord(file);
    if (!rec) {
      const hostId = this.#allocate(uid);
      const m = { hostId, containerId: 0, length: this.#idsPerPod };
      rec = { uidMappings: [m], gidMappings: [m] };
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o750 });
      // Written whole, then renamed: a crash leaves the old record or none.
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(rec), { mode: 0o600 });
      fs.renameSync(`${file}.tmp`, file);
    }
    const ids = rec.uidMappings.map((m) => ({ ...m }));
    return { mode: NamespaceMode.POD, uids: ids, gids: ids.map((m) => ({ ...m })) };
  }

  /**
   * The lowest free range. What is taken is read from the pods' records each time: pods with
   * their own user namespace are few, and a pod directory removed frees its range.
   */
  #allocate(uid: string): number {
    const taken = new Set<number>();
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(this.#podsDir);
    } catch {
      entries = [];
    }
    for (const other of entries) {
      if (other === uid) continue;
      // A record that cannot be read fails the allocation: its range might be in use.
      const rec = readRecord(path.join(this.#podsDir, other, mappingsFile));
      if (rec) taken.add(rec.uidMappings[0]!.hostId);
    }
    for (let i = 0; i < this.#blocks; i++) {
      const hostId = this.#firstId + i * this.#idsPerPod;
      if (!taken.has(hostId)) return hostId;
    }
    throw new Error('could not allocate user namespace: no free range');
  }
}
