import path from 'node:path';
import {
  ApiserverMirrorClient,
  ApiserverNodeClient,
  ApiserverObjectGetter,
  ApiserverRuntimeClassList,
  ApiserverServiceLister,
  ApiserverSource,
  ApiserverStatusSink,
  type MirrorPodApi,
  type PodStatusApi,
} from '@kubelet-kit/apiserver';
import {
  ApiserverSourceName,
  type Clock,
  type EventRecorder,
  type Logger,
  type MirrorClient,
  type NodeApi,
  type ObjectGetter,
  type RuntimeClassGetter,
  type ServiceLister,
} from '@kubelet-kit/core';
import type { PodSource } from '@kubelet-kit/pod-config';
import type { StatusSink } from '@kubelet-kit/status-manager';
import { LocalObjectGetter } from '@kubelet-kit/volume-manager';
import type { KubeConfig } from '@kubernetes/client-node';
import { LocalRuntimeClassList, loadRuntimeClasses } from './runtime-classes.js';

/** Options of {@link createApiClients}: the agent's flags that name where objects come from. */
export interface ApiClientsOptions {
  /** Upstream --kubeconfig; without it the agent has no API server. */
  readonly kubeconfig?: string | undefined;
  /** ConfigMap and Secret manifests, when there is no API server (it wins over the API server). */
  readonly objectDirectory?: string | undefined;
  /** RuntimeClass files (--runtime-classes). */
  readonly runtimeClasses?: string | undefined;
  readonly nodeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * The agent's clients of the API server (none without a kubeconfig) and the local stand-ins
 * for what it would give: the one place the agent builds API-server adapters.
 *
 * @internal
 */
export interface ApiClients {
  /** Loads the kubeconfig once, on first use; undefined without one. */
  readonly kubeConfig: (() => Promise<KubeConfig>) | undefined;
  /** ConfigMaps and Secrets for volumes, env and pull secrets: local files or the API server. */
  readonly objectGetter: ObjectGetter | undefined;
  /** Mirror pods of static pods, on the API server. */
  readonly mirrorClient: MirrorClient | undefined;
  /** Where pod statuses are written: the API server's pods/status. */
  readonly statusSinks: readonly StatusSink[];
  /** RuntimeClasses: the API server's, local files filling in names it lacks; or the files. */
  readonly runtimeClasses: RuntimeClassGetter;
  /** This node's Node object (registration and status), or undefined without an API server. */
  readonly nodeApi: NodeApi | undefined;
  /** The cluster's Services for service link variables (listed and watched), or undefined without one. */
  readonly serviceLister: ServiceLister | undefined;
  /** The API server's pods bound to this node, or undefined without one. */
  podSource(options: {
    readonly recorder: EventRecorder;
    readonly onError: (err: Error) => void;
  }): PodSource | undefined;
  /** Starts the RuntimeClass and Service watches (with an API server). */
  start(): void;
  stop(): Promise<void>;
}

/**
 * Builds the agent's API clients. The API client costs tens of MiB to load: only an agent with a
 * kubeconfig loads it, when its pod source, status sink or object reads first need it (so a bad
 * kubeconfig fails `start()`, not construction).
 *
 * @internal
 */
export function createApiClients(options: ApiClientsOptions): ApiClients {
  const { clock, logger, nodeName } = options;
  const kubeconfigPath = options.kubeconfig;
  let kubeConfigLoad: Promise<KubeConfig> | undefined;
  const kubeConfig = kubeconfigPath
    ? () =>
        (kubeConfigLoad ??= import('@kubernetes/client-node').then(({ KubeConfig }) => {
          const kc = new KubeConfig();
          kc.loadFromFile(kubeconfigPath);
          return kc;
        }))
    : undefined;

  let objectGetter: ObjectGetter | undefined;
  if (options.objectDirectory) {
    objectGetter = new LocalObjectGetter({
      directory: options.objectDirectory,
      clock,
      logger: logger.child({ component: 'objects' }),
    });
  } else if (kubeConfig) {
    let getter: Promise<ApiserverObjectGetter> | undefined;
    const apiGetter = () =>
      (getter ??= kubeConfig().then(
        (kc) =>
          new ApiserverObjectGetter({
            kubeConfig: kc,
            clock,
            logger: logger.child({ component: 'objects' }),
          }),
      ));
    objectGetter = {
      getConfigMap: async (namespace, name, signal) =>
        (await apiGetter()).getConfigMap(namespace, name, signal),
      getSecret: async (namespace, name, signal) => (await apiGetter()).getSecret(namespace, name, signal),
    };
  }

  // RuntimeClasses: from the API server with a kubeconfig (as upstream's kubelet), local files
  // (--runtime-classes) filling in names the API server lacks; from the files alone otherwise.
  const localRuntimeClasses = options.runtimeClasses
    ? loadRuntimeClasses(path.resolve(options.runtimeClasses))
    : new LocalRuntimeClassList();
  const apiRuntimeClasses = kubeConfig
    ? new ApiserverRuntimeClassList({ kubeConfig, fallback: localRuntimeClasses, clock, logger })
    : undefined;

  // Services for container environment variables, as upstream's kubelet watches them.
  const serviceLister = kubeConfig ? new ApiserverServiceLister({ kubeConfig, clock, logger }) : undefined;

  const statusSinks: StatusSink[] = [];
  let mirrorClient: MirrorClient | undefined;
  if (kubeConfig) {
    let client: Promise<PodStatusApi & MirrorPodApi> | undefined;
    const api = () =>
      (client ??= Promise.all([kubeConfig(), import('@kubernetes/client-node')]).then(([kc, m]) =>
        kc.makeApiClient(m.CoreV1Api),
      ));
    // Static pods show on the API server through their mirror pods.
    mirrorClient = new ApiserverMirrorClient({
      api: {
        createNamespacedPod: async (...args) => (await api()).createNamespacedPod(...args),
        deleteNamespacedPod: async (...args) => (await api()).deleteNamespacedPod(...args),
        readNode: async (...args) => (await api()).readNode(...args),
      },
      nodeName,
      logger,
    });
    statusSinks.push(
      new ApiserverStatusSink({
        api: {
          readNamespacedPod: async (...args) => (await api()).readNamespacedPod(...args),
          patchNamespacedPodStatus: async (...args) => (await api()).patchNamespacedPodStatus(...args),
          deleteNamespacedPod: async (...args) => (await api()).deleteNamespacedPod(...args),
        },
        logger: logger.child({ component: 'status-sink' }),
      }),
    );
  }

  // Node registration and status (nodestatus), through their own client.
  let nodeApi: NodeApi | undefined;
  if (kubeConfig) {
    let nodeClient: Promise<ApiserverNodeClient> | undefined;
    const client = () =>
      (nodeClient ??= Promise.all([kubeConfig(), import('@kubernetes/client-node')]).then(
        ([kc, m]) => new ApiserverNodeClient({ api: kc.makeApiClient(m.CoreV1Api) }),
      ));
    nodeApi = {
      getNode: async (...args) => (await client()).getNode(...args),
      createNode: async (...args) => (await client()).createNode(...args),
      patchNodeStatus: async (...args) => (await client()).patchNodeStatus(...args),
    };
  }

  return {
    kubeConfig,
    nodeApi,
    objectGetter,
    mirrorClient,
    statusSinks,
    runtimeClasses: apiRuntimeClasses ?? localRuntimeClasses,
    serviceLister,
    podSource({ recorder, onError }) {
      if (!kubeConfig) return undefined;
      let apiSource: ApiserverSource | undefined;
      return {
        name: ApiserverSourceName,
        start: async (sink) => {
          apiSource = new ApiserverSource({
            kubeConfig: await kubeConfig(),
            nodeName,
            clock,
            logger: logger.child({ source: 'api' }),
            recorder,
            onError,
          });
          await apiSource.start(sink);
        },
        stop: async () => {
          await apiSource?.stop();
        },
      };
    },
    start() {
      apiRuntimeClasses?.start();
      serviceLister?.start();
    },
    async stop() {
      await apiRuntimeClasses?.stop();
      await serviceLister?.stop();
    },
  };
}
