import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The agent's metrics, under upstream's names, in a registry of their own (never the global one).
 *
 * @public
 */
export class KubeletMetrics {
  readonly registry: Registry;
  readonly podStartDuration: Histogram<never>;
  readonly podWorkerDuration: Histogram<'operation_type'>;
  readonly runtimeOperations: Counter<'operation_type'>;
  readonly runtimeOperationsErrors: Counter<'operation_type'>;
  readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  readonly plegRelistDuration: Histogram<never>;
  readonly runningPods: Gauge<never>;
  readonly runningContainers: Gauge<'container_state'>;

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    // prometheus' DefBuckets, as upstream's pod worker and PLEG histograms use.
    const defBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
    // Upstream's runtime operation buckets: 14 from 5 ms, each 2.5 times the last (to about 12 min).
    const runtimeBuckets = Array.from({ length: 14 }, (_, i) => 0.005 * 2.5 ** i);
    // Upstream's metrics are ALPHA, and its registry prefixes their help with the level.
    const alpha = (help: string) => `[ALPHA] ${help}`;
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: alpha(
        'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      ),
      buckets: [
        0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800,
        2700, 3600,
      ],
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: alpha(
        'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
      ),
      labelNames: ['operation_type'],
      buckets: defBuckets,
      registers,
    });
    this.runtimeOperations = new Counter({
      name: 'kubelet_runtime_operations_total',
      help: alpha('Cumulative number of runtime operations by operation type.'),
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: alpha('Cumulative number of runtime operation errors by operation type.'),
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: alpha('Duration in seconds of runtime operations. Broken down by operation type.'),
      labelNames: ['operation_type'],
      buckets: runtimeBuckets,
      registers,
    });
    this.plegRelistDuration = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: alpha('Duration in seconds for relisting pods in PLEG.'),
      buckets: defBuckets,
      registers,
    });
    this.runningPods = new Gauge({
      name: 'kubelet_running_pods',
      help: alpha('Number of pods that have a running pod sandbox'),
      registers,
    });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: alpha('Number of containers currently running'),
      labelNames: ['container_state'],
      registers,
    });
  }
}
