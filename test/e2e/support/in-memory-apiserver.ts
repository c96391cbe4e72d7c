// The interface the e2e tests used with their first small fake API server, over
// @kubelet-kit/apiserver/testing's FakeApiServer.
// Kept from the old fake: this node exists (uid n1), the pod field selector is ignored (the
// admission test hands the agent a pod bound elsewhere), `patched` holds each pod's last status
// patch. New: everything else behaves as a real API server (mirror pods are created, the
// default/kubernetes Service exists, the node's status and Lease are stored).

import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import type { Pod, RuntimeClass } from '@kubelet-kit/core';

export interface InMemoryApiserver {
  readonly api: FakeApiServer;
  /** The last status patch of each pod, by name. */
  readonly patched: Map<string, { status?: { phase?: string; reason?: string; message?: string } }>;
  /** Listens on 127.0.0.1 and writes a kubeconfig pointing there; returns its path. */
  listen(kubeconfigPath: string): Promise<string>;
  close(): Promise<void>;
}

export function inMemoryApiserver(
  nodeName: string,
  pods: Pod[],
  runtimeClasses: readonly RuntimeClass[] = [],
): InMemoryApiserver {
  const api = new FakeApiServer();
  api.ignoreFieldSelectors('pods');
  api.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName, uid: 'n1' } });
  for (const p of pods) api.create({ ...p, apiVersion: 'v1', kind: 'Pod' });
  for (const rc of runtimeClasses) api.create({ ...rc, apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass' });
  return {
    api,
    get patched() {
      const out: InMemoryApiserver['patched'] = new Map();
      for (const r of api.requests) {
        const m = /^\/api\/v1\/namespaces\/[^/]+\/pods\/([^/]+)\/status$/.exec(r.path);
        if (r.method === 'PATCH' && m?.[1])
          out.set(m[1], r.body as { status?: { phase?: string; reason?: string; message?: string } });
      }
      return out;
    },
    async listen(kubeconfigPath) {
      await api.start();
      return api.writeKubeconfig(kubeconfigPath);
    },
    async close() {
      await api.stop();
    },
  };
}
