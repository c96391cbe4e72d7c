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
  // A worker passes the same labels object every time: its label sets and children are built
  // once, not per probe.
  const children = new WeakMap<ProbeMetricLabels, WorkerSeries>();
  const seriesOf = (l: ProbeMetricLabels): WorkerSeries => {
    let series = children.get(l);
    if (!series) {
      const base = { probe_type: l.probeType, container: l.container, pod: l.pod, namespace: l.namespace };
      const byResult = (result: ProbeResult) => ({ ...base, result: resultLabel[result] });
      series = {
        base,
        results: [byResult('Success'), byResult('Failure'), byResult('Unknown')],
        total: {
          Success: total.labels(byResult('Success')),
          Failure: total.labels(byResult('Failure')),
          Unknown: total.labels(byResult('Unknown')),
        },
        duration: duration.labels(base),
      };
      children.set(l, series);
    }
    return series;
  };
  return {
    observe(labels, result, seconds) {
      const series = seriesOf(labels);
      series.total[result].inc();
      if (result !== 'Failure') series.duration.observe(seconds);
    },
    remove(labels) {
      const series = seriesOf(labels);
      for (const set of series.results) total.remove(set);
      duration.remove(series.base);
      children.delete(labels);
    },
  };
}

/** One worker's label sets and prom-client children. */
interface WorkerSeries {
  readonly base: Record<string, string>;
  readonly results: ReadonlyArray<Record<string, string>>;
  readonly total: Record<ProbeResult, Counter.Internal>;
  readonly duration: Histogram.Internal<string>;
}
