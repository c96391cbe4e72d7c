import type { MirrorClient } from '@kubelet-kit/core';
import {
  type CachedPodStatus,
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  type Pod,
  type PodStatus,
  type PodStatusCache,
  type Runtime,
  type RuntimePod,
  type Subpather,
} from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import type { UpdatePodOptions } from '@kubelet-kit/pod-workers';
import { FakeVolumeManager } from '@kubelet-kit/volume-manager/testing';
import type { PlegView, PodConfigView, ProbeManagerView, StatusManagerView } from '../src/deps.js';
import { Kubelet } from '../src/kubelet.js';

// A Kubelet that is never started unless a test starts it, over fakes of each manager: what its
// handlers hand the pod workers (recorded in `updates`, the workers do nothing), and what status
// it writes. The volume manager is volume-manager's FakeVolumeManager.

export const emptyStatus: CachedPodStatus = {
  status: {
    id: '',
    name: '',
    namespace: '',
    ips: [],
    sandboxStatuses: [],
    containerStatuses: [],
    timestamp: 0,
  },
  error: undefined,
  modified: 0,
};
const podCache: PodStatusCache = {
  get: () => emptyStatus,
  getNewerThan: async () => emptyStatus,
};

export interface MirrorCall {
  readonly op: 'create' | 'delete';
  readonly name: string;
  readonly uid?: string | undefined;
}

export function fakeMirrorClient(calls: MirrorCall[]): MirrorClient {
  return {
    async createMirrorPod(pod) {
      calls.push({ op: 'create', name: pod.metadata?.name ?? '' });
    },
    async deleteMirrorPod(fullName, uid) {
      calls.push({ op: 'delete', name: fullName, uid });
      return true;
    },
  };
}

export function setup(
  maxPods = 110,
  runtimePods: RuntimePod[] = [],
  extra: {
    mirrorClient?: MirrorClient;
    rootDirectory?: string;
    runtimeErrors?: () => string | undefined;
    subpather?: Subpather;
  } = {},
) {
  const volumeManager = new FakeVolumeManager();
  const recorder = new InMemoryEventRecorder();
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const podManager = new BasicPodManager();
  const written: Array<{ uid: string; status: PodStatus }> = [];
  const statusManager: StatusManagerView = {
    start() {},
    stop() {},
    getPodStatus: () => undefined,
    getPodPhase: () => undefined,
    setPodStatus(pod, status) {
      written.push({ uid: pod.metadata?.uid ?? '', status });
    },
    setContainerReadiness() {},
    setContainerStartup() {},
    terminatePod() {},
    removeOrphanedStatuses() {},
  };
  const podConfig: PodConfigView = {
    async *updates() {},
    seenAllSources: () => true,
    start() {},
    async stop() {},
  };
  const pleg: PlegView = {
    start() {},
    stop() {},
    watch: () => () => {},
    healthy: () => ({ healthy: true }),
  };
  const probedUids: Array<ReadonlySet<string>> = [];
  const probeManager: ProbeManagerView = {
    start() {},
    async stop() {},
    addPod() {},
    removePod() {},
    cleanupPods(uids) {
      probedUids.push(new Set(uids));
    },
    stopLivenessAndStartup() {},
    updatePodStatus() {},
    onResult: () => () => {},
  };
  const kubelet = new Kubelet({
    nodeName: 'node-a',
    rootDirectory: extra.rootDirectory ?? '/nonexistent/kubelet-kit-handlers-test',
    nodeIPs: ['192.0.2.10'],
    allocatable: { cpu: 4, memory: 8 * 2 ** 30, pods: maxPods },
    // Housekeeping lists the runtime's pods and may collect garbage; nothing else is called.
    runtime: {
      getPods: async () => runtimePods,
      garbageCollect: async () => {},
      syncPod: async () => ({ syncResults: [] }),
    } as unknown as Runtime,
    volumeManager,
    recorder,
    ...extra,
    probeManager,
    podConfig,
    podManager,
    statusManager,
    pleg,
    podCache,
    clock,
  });
  const updates: UpdatePodOptions[] = [];
  kubelet.podWorkers.updatePod = (options: UpdatePodOptions) => {
    updates.push(options);
  };
  return { kubelet, podManager, updates, written, probedUids, clock, volumeManager, recorder };
}

export function staticPod(name: string, uid: string): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid,
      annotations: { [ConfigHashAnnotationKey]: uid, [ConfigSourceAnnotationKey]: 'file' },
    },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
    status: { phase: 'Pending' },
  };
}

export function mirrorOf(pod: Pod, uid: string): Pod {
  return {
    metadata: {
      name: pod.metadata?.name ?? '',
      namespace: pod.metadata?.namespace ?? '',
      uid,
      annotations: {
        [ConfigHashAnnotationKey]: pod.metadata?.uid ?? '',
        [ConfigMirrorAnnotationKey]: pod.metadata?.uid ?? '',
        [ConfigSourceAnnotationKey]: 'api',
      },
    },
    spec: pod.spec ?? { containers: [] },
  };
}

export function apiPod(name: string, uid: string, status: PodStatus, readinessGate?: string): Pod {
  return {
    metadata: { name, namespace: 'default', uid, annotations: { [ConfigSourceAnnotationKey]: 'api' } },
    spec: {
      containers: [{ name: 'main', image: 'busybox' }],
      ...(readinessGate ? { readinessGates: [{ conditionType: readinessGate }] } : {}),
    },
    status,
  };
}
