import {
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  type Logger,
  type MirrorClient,
  noopLogger,
  type Pod,
} from '@kubelet-kit/core';
// Types only: the client is loaded with the agent's kubeconfig.
import type { CoreV1Api } from '@kubernetes/client-node';
import { httpStatusOf } from './api-errors.js';

/**
 * The part of `CoreV1Api` (object-parameter form, client-node 1.4) the mirror client calls.
 *
 * @public
 */
export type MirrorPodApi = Pick<CoreV1Api, 'createNamespacedPod' | 'deleteNamespacedPod' | 'readNode'>;

/**
 * Options of {@link ApiserverMirrorClient}.
 *
 * @public
 */
export interface ApiserverMirrorClientOptions {
  readonly api: MirrorPodApi;
  /** The Node object that owns the mirror pods (`--hostname-override`). */
  readonly nodeName: string;
  readonly logger?: Logger;
}

/** A full name `name_namespace` split at its last underscore (names and namespaces have none). */
function parsePodFullName(podFullName: string): { name: string; namespace: string } {
  const i = podFullName.lastIndexOf('_');
  if (i <= 0 || i === podFullName.length - 1) {
    throw new Error(`failed to parse the pod full name ${JSON.stringify(podFullName)}`);
  }
  return { name: podFullName.slice(0, i), namespace: podFullName.slice(i + 1) };
}

/**
 * A `MirrorClient` (from `@kubelet-kit/core`) over the API server.
 *
 * @public
 */
export class ApiserverMirrorClient implements MirrorClient {
  readonly #api: MirrorPodApi;
  readonly #nodeName: string;
  readonly #logger: Logger;

  constructor(options: ApiserverMirrorClientOptions) {
    this.#api = options.api;
    this.#nodeName = options.nodeName;
    this.#logger = (options.logger ?? noopLogger).child({ component: 'mirror-client' });
  }

  async createMirrorPod(pod: Pod): Promise<void> {
    // Mirror pods must name their node as owner (NodeRestriction admits no other); a node that
    // is being removed gets no new ones.
    const node = await this.#api.readNode({ name: this.#nodeName });
    const nodeUid = node.metadata?.uid;
    if (!nodeUid) throw new Error(`node ${this.#nodeName} has no UID`);
    if (node.metadata?.deletionTimestamp) {
      this.#logger.info({ node: this.#nodeName }, 'not creating a mirror pod: the node is being removed');
      return;
    }
    const hash = pod.metadata?.annotations?.[ConfigHashAnnotationKey] ?? '';
    const mirror: Pod = {
      ...pod,
      metadata: {
        ...pod.metadata,
        annotations: { ...pod.metadata?.annotations, [ConfigMirrorAnnotationKey]: hash },
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Node', name: this.#nodeName, uid: nodeUid, controller: true },
        ],
      },
    };
    try {
      // The client's types want its own model classes; the plain object is what goes on the wire.
      await this.#api.createNamespacedPod({
        namespace: pod.metadata?.namespace ?? 'default',
        body: mirror as Parameters<MirrorPodApi['createNamespacedPod']>[0]['body'],
      });
    } catch (err) {
      // AlreadyExists: an earlier sync made it.
      if (httpStatusOf(err) !== 409) throw err;
    }
  }

  async deleteMirrorPod(podFullName: string, uid: string | undefined): Promise<boolean> {
    const { name, namespace } = parsePodFullName(podFullName);
    try {
      await this.#api.deleteNamespacedPod({
        name,
        namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, ...(uid ? { preconditions: { uid } } : {}) },
      });
      return true;
    } catch (err) {
      // Gone already, or a new pod of the same name (the UID precondition failed): not ours.
      const code = httpStatusOf(err);
      if (code !== 404 && code !== 409) {
        this.#logger.error({ pod: `${namespace}/${name}`, err: String(err) }, 'failed deleting a mirror pod');
      }
      return false;
    }
  }
}
