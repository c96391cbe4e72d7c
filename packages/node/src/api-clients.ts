import path from 'node:path';
import {
  VERSION as APISERVER_VERSION,
  ApiserverEventRecorder,
  ApiserverEventSink,
  ApiserverLeaseClient,
  ApiserverMirrorClient,
  ApiserverNodeClient,
  ApiserverRuntimeClassList,
  ApiserverServiceLister,
  ApiserverSource,
  ApiserverStatusSink,
  DiskOfflineStore,
  kubeletUserAgent,
  loadClientNode,
  type MirrorPodApi,
  nodeApiWithStore,
  type PodStatusApi,
  serviceAccountTokenRequester,
  setUserAgent,
  TokenManager,
  WatchingObjectGetter,
} from '@kubelet-kit/apiserver';
import {
  ApiserverSourceName,
  type Clock,
  type EventRecorder,
  type Logger,
  type MirrorClient,
  type NodeApi,
  type ObjectGetter,
  type OfflineStore,
  type RuntimeClassGetter,
  type ServiceLister,
  type TokenGetter,
} from '@kubelet-kit/core';
import { type NodeLeaseController, newNodeLeaseController } from '@kubelet-kit/node-lease';
import type { PodSource } from '@kubelet-kit/pod-config';
import type { StatusSink } from '@kubelet-kit/status-manager';
import { LocalObjectGetter } from '@kubelet-kit/volume-manager';
import type { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
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
  /** Upstream --event-qps (default 50) and --event-burst (default 100), for the API server's events. */
  readonly eventQPS?: number | undefined;
  readonly eventBurst?: number | undefined;
  /** Upstream --node-lease-duration-seconds; default 40. */
  readonly nodeLeaseDurationSeconds?: number | undefined;
  /**
   * Offline operation (--offline-store-dir): the adapters write pods, their objects and tokens,
   * the Node and the last statuses through this store and fall back to it while the API server
   * cannot be reached; status writes and events wait for the server instead of failing.
   */
  readonly offlineStore?: OfflineStore | undefined;
  /** With a kubeconfig and no `offlineStore`: the folder of the default on-disk store. */
  readonly offlineStoreDirectory?: string | undefined;
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
  /** Service account tokens for projected volumes (TokenRequest), or undefined without one. */
  readonly tokenGetter: TokenGetter | undefined;
  /** Events written to the API server (core/v1 Events), or undefined without one. */
  readonly eventRecorder: ApiserverEventRecorder | undefined;
  /** Renews the node's Lease in kube-node-lease, or undefined without an API server. */
  readonly nodeLease: NodeLeaseController | undefined;
  /** The API server's pods bound to this node, or undefined without one. */
  podSource(options: {
    readonly recorder: EventRecorder;
    readonly onError: (err: Error) => void;
  }): PodSource | undefined;
  /** Starts the RuntimeClass and Service watches (with an API server). */
  start(): void;
  stop(): Promise<void>;
}

function kubeconfigPathGiven(options: ApiClientsOptions): boolean {
  return Boolean(options.kubeconfig);
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
  const store =
    options.offlineStore ??
    (kubeconfigPathGiven(options) && options.offlineStoreDirectory
      ? new DiskOfflineStore({
          directory: options.offlineStoreDirectory,
          logger: logger.child({ component: 'offline-store' }),
        })
      : undefined);
  if (store && options.kubeconfig)
    logger.info('offline operation on: API objects are kept in the offline store');
  const kubeconfigPath = options.kubeconfig;
  let kubeConfigLoad: Promise<KubeConfig> | undefined;
  const kubeConfig = kubeconfigPath
    ? () =>
        (kubeConfigLoad ??= loadClientNode().then(({ KubeConfig }) => {
          const kc = new KubeConfig();
          kc.loadFromFile(kubeconfigPath);
          // Every request and watch says it is a kubelet (upstream's User-Agent shape).
          setUserAgent(kc, kubeletUserAgent({ kitVersion: APISERVER_VERSION }));
          return kc;
        }))
    : undefined;

  let objectGetter: ObjectGetter | undefined;
  let watchingObjectGetter: WatchingObjectGetter | undefined;
  if (options.objectDirectory) {
    objectGetter = new LocalObjectGetter({
      directory: options.objectDirectory,
      clock,
      logger: logger.child({ component: 'objects' }),
    });
  } else if (kubeConfig) {
    // Upstream's default Watch strategy: one watch per object read, GETs with a TTL as fallback.
    watchingObjectGetter = new WatchingObjectGetter({
      kubeConfig,
      clock,
      logger: logger.child({ component: 'objects' }),
      ...(store ? { store } : {}),
    });
    objectGetter = watchingObjectGetter;
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
  const serviceLister = kubeConfig
    ? new ApiserverServiceLister({ kubeConfig, clock, logger, ...(store ? { store } : {}) })
    : undefined;

  const statusSinks: StatusSink[] = [];
  let mirrorClient: MirrorClient | undefined;
  if (kubeConfig) {
    let client: Promise<PodStatusApi & MirrorPodApi> | undefined;
    const api = () =>
      (client ??= Promise.all([kubeConfig(), loadClientNode()]).then(([kc, m]) =>
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
        // Upstream's status manager deletes a pod the API server is deleting once its worker
        // finished it (containers stopped, volumes unmounted): grace 0, UID precondition.
        deletePods: true,
        ...(store ? { store, queueWhileUnreachable: true, clock } : {}),
      }),
    );
  }

  // Tokens of projected serviceAccountToken sources (upstream's token manager).
  const tokenManager = kubeConfig
    ? new TokenManager({
        requestToken: serviceAccountTokenRequester(async () => {
          const [kc, m] = await Promise.all([kubeConfig(), loadClientNode()]);
          return kc.makeApiClient(m.CoreV1Api);
        }),
        clock,
        logger,
        ...(store ? { store } : {}),
      })
    : undefined;
  // Events and the node lease (upstream's event client and heartbeat client).
  let eventRecorder: ApiserverEventRecorder | undefined;
  let nodeLease: NodeLeaseController | undefined;
  if (kubeConfig) {
    let core: Promise<CoreV1Api> | undefined;
    let coordination: Promise<CoordinationV1Api> | undefined;
    const coreApi = () =>
      (core ??= Promise.all([kubeConfig(), loadClientNode()]).then(([kc, m]) =>
        kc.makeApiClient(m.CoreV1Api),
      ));
    const coordinationApi = () =>
      (coordination ??= Promise.all([kubeConfig(), loadClientNode()]).then(([kc, m]) =>
        kc.makeApiClient(m.CoordinationV1Api),
      ));
    eventRecorder = new ApiserverEventRecorder({
      sink: new ApiserverEventSink({
        api: {
          createNamespacedEvent: async (...args) => (await coreApi()).createNamespacedEvent(...args),
          patchNamespacedEvent: async (...args) => (await coreApi()).patchNamespacedEvent(...args),
        },
      }),
      nodeName,
      eventQPS: options.eventQPS,
      eventBurst: options.eventBurst,
      clock,
      logger,
      ...(store ? { queueWhileUnreachable: true, store } : {}),
    });
    // The Node is looked up for the lease's owner reference; until it exists the lease waits.
    const leaseClient = new ApiserverLeaseClient({
      coordination: {
        readNamespacedLease: async (...args) => (await coordinationApi()).readNamespacedLease(...args),
        createNamespacedLease: async (...args) => (await coordinationApi()).createNamespacedLease(...args),
        replaceNamespacedLease: async (...args) => (await coordinationApi()).replaceNamespacedLease(...args),
      },
      core: { readNode: async (...args) => (await coreApi()).readNode(...args) },
    });
    nodeLease = newNodeLeaseController({
      api: leaseClient,
      nodeUidGetter: leaseClient,
      nodeName,
      leaseDurationSeconds: options.nodeLeaseDurationSeconds,
      clock,
      logger,
    });
  }
  // Node registration and status (nodestatus), through their own client.
  let nodeApi: NodeApi | undefined;
  if (kubeConfig) {
    let nodeClient: Promise<ApiserverNodeClient> | undefined;
    const client = () =>
      (nodeClient ??= Promise.all([kubeConfig(), loadClientNode()]).then(
        ([kc, m]) => new ApiserverNodeClient({ api: kc.makeApiClient(m.CoreV1Api) }),
      ));
    nodeApi = {
      getNode: async (...args) => (await client()).getNode(...args),
      createNode: async (...args) => (await client()).createNode(...args),
      patchNodeStatus: async (...args) => (await client()).patchNodeStatus(...args),
    };
    if (store) nodeApi = nodeApiWithStore(nodeApi, store, logger.child({ component: 'node-store' }));
  }

  return {
    eventRecorder,
    nodeLease,
    kubeConfig,
    nodeApi,
    objectGetter,
    tokenGetter: tokenManager,
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
            ...(store ? { store } : {}),
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
      tokenManager?.start();
      watchingObjectGetter?.start();
    },
    async stop() {
      await apiRuntimeClasses?.stop();
      await serviceLister?.stop();
      tokenManager?.stop();
      await watchingObjectGetter?.stop();
    },
  };
}
