import type { ProbeResult } from '@kubelet-kit/core';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { ProbeType } from './types.js';

/** The labels of one worker's series. */
export interface ProbeMetricLabels {
  readonly probeType: ProbeType;
  readonly container: string;
  readonly pod: string;
  readonly namespace: string;
}

/** Where workers report probe counts and durations. */
export interface ProberMetrics {
  /** One probe finished with `result` after `seconds`. */
  observe(labels: ProbeMetricLabels, result: ProbeResult, seconds: number): void;
  /** Drops a worker's series when it stops, as upstream does. */
  remove(labels: ProbeMetricLabels): void;
}

/** Metrics that go nowhere: the default when no registry is given. */
export const noopProberMetrics: ProberMetrics = { observe: () => {}, remove: () => {} };

const resultLabel: Record<ProbeResult, string> = {
  Success: 'successful',
  Failure: 'failed',
  Unknown: 'unknown',
};

const totalName = 'prober_probe_total';
const durationName = 'prober_probe_duration_seconds';

/**
 * `prober_probe_total{probe_type,result,container,pod,namespace}` and
 * `prober_probe_duration_seconds{probe_type,container,pod,namespace}` in the given registry.
 * As upstream, durations are observed for successful (and unknown) probes only. Metrics already
 * in the registry under these names are reused, so several managers can share one registry.
 */
export function createProberMetrics(registry: Registry): ProberMetrics {
  const total =
    (registry.getSingleMetric(totalName) as Counter<string> | undefined) ??
    new Counter({
      name: totalName,
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace'],
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric(durationName) as Histogram<string> | undefined) ??
    new Histogram({
      name: durationName,
      help: 'Duration in seconds for a probe response.',
      labelNames: ['probe_type', 'container', 'pod', 'namespace'],
      registers: [registry],
    });
  const base = (l: ProbeMetricLabels) => ({
    probe_type: l.probeType,
    container: l.container,
    pod: l.pod,
    namespace: l.namespace,
  });
  return {
    observe(labels, result, seconds) {
      total.inc({ ...base(labels), result: resultLabel[result] });
      if (result !== 'Failure') duration.observe(base(labels), seconds);
    },
    remove(labels) {
      for (const result of Object.values(resultLabel)) total.remove({ ...base(labels), result });
      duration.remove(base(labels));
    },
  };
}
