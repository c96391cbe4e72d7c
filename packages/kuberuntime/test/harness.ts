import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Backoff, Pod, ProbeResult, RuntimePodStatus } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import {
  KubeGenericRuntimeManager,
  type KubeGenericRuntimeManagerOptions,
  newCrashLoopBackOff,
  type RuntimeService,
} from '../src/index.js';

/** An in-memory CRI, a manager over it on a FakeClock, and temp directories. */
export interface Harness {
  readonly server: InMemoryCriServer;
  readonly clock: FakeClock;
  readonly recorder: InMemoryEventRecorder;
  readonly manager: KubeGenericRuntimeManager;
  readonly rs: RuntimeServiceClient;
  readonly is: ImageServiceClient;
  readonly dir: string;
  readonly backOff: Backoff;
  readonly liveness: Map<string, ProbeResult>;
  readonly startup: Map<string, ProbeResult>;
  newManager(extra?: Partial<KubeGenericRuntimeManagerOptions>): KubeGenericRuntimeManager;
  status(pod: Pod): Promise<RuntimePodStatus>;
  sync(pod: Pod): ReturnType<KubeGenericRuntimeManager['syncPod']>;
  close(): Promise<void>;
}

export async function harness(
  options: {
    images?: string[];
    registry?: string[];
    manager?: Partial<KubeGenericRuntimeManagerOptions>;
  } = {},
): Promise<Harness> {
  const clock = new FakeClock();
  const server = await InMemoryCriServer.start({
    clock,
    runtimeName: 'containerd',
    images: options.images ?? ['busybox', 'bar-image', 'busybox:v2', 'foo-image'],
    registry: options.registry ?? [],
  });
  const rs = new RuntimeServiceClient({ endpoint: server.endpoint });
  const is = new ImageServiceClient({ endpoint: server.endpoint });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-kuberuntime-'));
  const recorder = new InMemoryEventRecorder({ now: () => clock.now() });
  const liveness = new Map<string, ProbeResult>();
  const startup = new Map<string, ProbeResult>();
  const newManager = (extra: Partial<KubeGenericRuntimeManagerOptions> = {}) =>
    new KubeGenericRuntimeManager({
      runtimeService: rs,
      imageService: is,
      clock,
      recorder,
      rootDirectory: path.join(dir, 'root'),
      podLogsRootDirectory: path.join(dir, 'logs'),
      nodeName: 'node-1',
      nodeIPs: ['192.168.0.10'],
      memoryCapacity: 8 * 2 ** 30,
      // kubeadm's cluster domain (the kubelet's own default is none).
      dns: { resolvConf: '', clusterDomain: 'cluster.local' },
      livenessManager: { get: (id) => liveness.get(id) },
      startupManager: { get: (id) => startup.get(id) },
      ...options.manager,
      ...extra,
    });
  const manager = newManager();
  const backOff = newCrashLoopBackOff({ clock });
  const status = (pod: Pod) =>
    manager.getPodStatus({
      uid: pod.metadata!.uid!,
      name: pod.metadata!.name!,
      namespace: pod.metadata!.namespace!,
    });
  return {
    server,
    clock,
    recorder,
    manager,
    rs,
    is,
    dir,
    backOff,
    liveness,
    startup,
    newManager,
    status,
    async sync(pod) {
      const podStatus = await status(pod);
      const result = await manager.syncPod({ pod, podStatus, pullSecrets: [], backOff });
      // Later instances must sort after earlier ones: time moves between syncs.
      await clock.tick(1000);
      return result;
    },
    async close() {
      rs.close();
      is.close();
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let seq = 0;

/** A pod with the given containers (image busybox unless set). */
export function makePod(
  spec: Partial<NonNullable<Pod['spec']>> & { containers: NonNullable<Pod['spec']>['containers'] },
  meta: Partial<NonNullable<Pod['metadata']>> = {},
): Pod {
  seq++;
  return {
    metadata: { name: `pod-${seq}`, namespace: 'default', uid: `uid-${seq}`, ...meta },
    spec: { restartPolicy: 'Always', ...spec },
  };
}

/** The runtime service with some methods replaced (each override gets the real client). */
export function overriding(
  rs: RuntimeServiceClient,
  overrides: Partial<Record<keyof RuntimeService, (real: RuntimeServiceClient, req: never) => unknown>>,
): RuntimeService {
  return new Proxy(rs, {
    get(target, key, receiver) {
      const override = overrides[key as keyof RuntimeService];
      if (override) return (req: never) => override(target, req);
      const value = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The pod as upstream's `format.Pod` prints it. */
export const formatPod = (pod: Pod): string =>
  `${pod.metadata!.name}_${pod.metadata!.namespace}(${pod.metadata!.uid})`;
