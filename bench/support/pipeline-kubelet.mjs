// The whole pipeline assembled as `createAgent` does (pod-config → pod workers → kuberuntime →
// CRI, with the PLEG, status manager, volume and probe managers), minus the HTTP endpoints, with
// a programmatic source (StaticPodSource) instead of files.
import path from 'node:path';
import { noopEventRecorder, noopLogger, RealClock } from '@kubelet-kit/core';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { KubeGenericRuntimeManager } from '@kubelet-kit/kuberuntime';
import { Kubelet, KubeletMetrics } from '@kubelet-kit/node';
import { GenericPLEG, PodStatusCache } from '@kubelet-kit/pleg';
import { PodConfig } from '@kubelet-kit/pod-config';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import { DefaultProbeManager, DefaultResultsManager } from '@kubelet-kit/prober';
import { newStatusManager } from '@kubelet-kit/status-manager';
import { BasicVolumeManager } from '@kubelet-kit/volume-manager';

export function assembleKubelet({
  endpoint,
  rootDirectory,
  nodeName,
  maxPods,
  source,
  logger = noopLogger,
  maxConcurrentSyncs,
}) {
  const clock = new RealClock();
  const recorder = noopEventRecorder;
  const nodeIPs = ['127.0.0.1'];
  const metrics = new KubeletMetrics();
  let kubelet;
  const workers = () => kubelet.podWorkers;
  const podStateProvider = {
    shouldPodContentBeRemoved: (uid) => workers().shouldPodContentBeRemoved(uid),
    shouldPodRuntimeBeRemoved: (uid) => workers().shouldPodRuntimeBeRemoved(uid),
    shouldPodContainersBeTerminating: (uid) => workers().shouldPodContainersBeTerminating(uid),
  };
  const podManager = new BasicPodManager();
  const podConfig = new PodConfig({ recorder, logger, clock });
  const podConfigView = {
    updates: (signal) => podConfig.updates(signal ? { signal } : {}),
    seenAllSources: () => podConfig.seenAllSources(podConfig.sources),
    start: () => podConfig.addSource(source),
    stop: () => podConfig.stop(),
  };
  const runtimeService = new RuntimeServiceClient({ endpoint });
  const imageService = new ImageServiceClient({ endpoint });
  const statusManager = newStatusManager({
    podManager,
    podDeletionSafety: {
      podCouldHaveRunningContainers: (pod) => workers().couldHaveRunningContainers(pod.metadata?.uid ?? ''),
    },
    sinks: [],
    clock,
    logger,
  });
  const livenessManager = new DefaultResultsManager();
  const readinessManager = new DefaultResultsManager();
  const startupManager = new DefaultResultsManager();
  const volumeManager = new BasicVolumeManager({
    rootDirectory,
    getPods: () => podManager.getPods(),
    podStateProvider,
    sourcesReady: () => podConfigView.seenAllSources(),
    nodeName,
    clock,
    logger,
    eventRecorder: recorder,
  });
  const runtime = new KubeGenericRuntimeManager({
    runtimeService,
    imageService,
    clock,
    logger,
    recorder,
    livenessManager,
    startupManager,
    volumeProvider: volumeManager,
    podStateProvider,
    rootDirectory,
    podLogsRootDirectory: path.join(rootDirectory, 'logs', 'pods'),
    nodeName,
    nodeIPs,
  });
  const probeManager = new DefaultProbeManager({
    statusProvider: statusManager,
    runner: runtime,
    clock,
    recorder,
    logger,
    registry: metrics.registry,
    livenessManager,
    readinessManager,
    startupManager,
  });
  const resultManagers = { liveness: livenessManager, readiness: readinessManager, startup: startupManager };
  const podCache = new PodStatusCache();
  const pleg = new GenericPLEG({
    runtime,
    cache: podCache,
    clock,
    logger,
    onRelist: (r) => metrics.plegRelistDuration.observe(r.durationMs / 1000),
  });
  kubelet = new Kubelet({
    nodeName,
    rootDirectory,
    nodeIPs,
    allocatable: { cpu: 1000, memory: 2 ** 50, pods: maxPods },
    runtime,
    podConfig: podConfigView,
    podManager,
    statusManager,
    pleg,
    podCache,
    probeManager: {
      start: () => probeManager.start(),
      stop: () => probeManager.stop(),
      addPod: (pod) => probeManager.addPod(pod),
      removePod: (pod) => probeManager.removePod(pod),
      cleanupPods: (uids) => probeManager.cleanupPods(uids),
      stopLivenessAndStartup: (pod) => probeManager.stopLivenessAndStartup(pod),
      updatePodStatus: (pod, status) => probeManager.updatePodStatus(pod, status),
      onResult: (type, listener) => resultManagers[type].subscribe(listener),
    },
    volumeManager,
    clock,
    logger,
    recorder,
    metrics,
    networkReady: () => true,
    ...(maxConcurrentSyncs ? { maxConcurrentSyncs } : {}),
  });
  return {
    kubelet,
    metrics,
    async stop() {
      await kubelet.stop();
      runtimeService.close();
      imageService.close();
    },
  };
}

/** How many pods reached Running (kubelet_pod_start_duration_seconds counts each pod once). */
export async function startedPods(metrics) {
  const { values } = await metrics.podStartDuration.get();
  return values.find((v) => v.metricName === 'kubelet_pod_start_duration_seconds_count')?.value ?? 0;
}
