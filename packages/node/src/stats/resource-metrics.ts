import type { Summary } from './summary-types.js';

// `/metrics/resource` (upstream pkg/kubelet/metrics/collectors/resource_metrics.go): the summary's
// cpu-and-memory figures as Prometheus text, each sample stamped with the time its figure was
// taken (the collector's NewMetricWithTimestamp), families in name order as a gatherer sorts them.

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly samples: string[];
}

/** Go's strconv.FormatFloat(v, 'g', -1, 64), as the Prometheus text encoder writes values. @internal */
export function goFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return '0';
  const [mantissa, e] = v.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return String(v);
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labels = (pairs: readonly (readonly [string, string])[]) =>
  `{${pairs.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
const ms = (time: string | undefined) => (time ? Date.parse(time) : Number.NaN);

/**
 * Renders the resource metrics of `summary`; `scrapeError` when the summary could not be made
 * (then only the error gauges are written, as upstream).
 *
 * @internal
 */
export function renderResourceMetrics(summary: Summary | undefined, scrapeError: boolean): string {
  const fam = (name: string, type: Family['type'], help: string): Family => ({
    name,
    type,
    help,
    samples: [],
  });
  const containerCpu = fam(
    'container_cpu_usage_seconds_total',
    'counter',
    '[STABLE] Cumulative cpu time consumed by the container in core-seconds',
  );
  const containerMem = fam(
    'container_memory_working_set_bytes',
    'gauge',
    '[STABLE] Current working set of the container in bytes',
  );
  const containerStart = fam(
    'container_start_time_seconds',
    'gauge',
    '[STABLE] Start time of the container since unix epoch in seconds',
  );
  const nodeCpu = fam(
    'node_cpu_usage_seconds_total',
    'counter',
    '[STABLE] Cumulative cpu time consumed by the node in core-seconds',
  );
  const nodeMem = fam(
    'node_memory_working_set_bytes',
    'gauge',
    '[STABLE] Current working set of the node in bytes',
  );
  const podCpu = fam(
    'pod_cpu_usage_seconds_total',
    'counter',
    '[STABLE] Cumulative cpu time consumed by the pod in core-seconds',
  );
  const podMem = fam(
    'pod_memory_working_set_bytes',
    'gauge',
    '[STABLE] Current working set of the pod in bytes',
  );
  const resourceError = fam(
    'resource_scrape_error',
    'gauge',
    '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise',
  );
  const scrapeErr = fam(
    'scrape_error',
    'gauge',
    '[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise',
  );
  const flag = scrapeError ? '1' : '0';
  resourceError.samples.push(`resource_scrape_error ${flag}`);
  scrapeErr.samples.push(`scrape_error ${flag}`);

  const put = (f: Family, l: string, value: number | undefined, time: string | undefined) => {
    if (value === undefined) return;
    const t = ms(time);
    f.samples.push(`${f.name}${l} ${goFloat(value)}${Number.isNaN(t) ? '' : ` ${t}`}`);
  };
  if (summary && !scrapeError) {
    const n = summary.node;
    const ns = n.cpu?.usageCoreNanoSeconds;
    put(nodeCpu, '', ns !== undefined ? ns / 1e9 : undefined, n.cpu?.time);
    put(nodeMem, '', n.memory?.workingSetBytes, n.memory?.time);
    for (const p of summary.pods) {
      const pl = labels([
        ['namespace', p.podRef.namespace],
        ['pod', p.podRef.name],
      ]);
      const pc = p.cpu?.usageCoreNanoSeconds;
      put(podCpu, pl, pc !== undefined ? pc / 1e9 : undefined, p.cpu?.time);
      put(podMem, pl, p.memory?.workingSetBytes, p.memory?.time);
      for (const c of p.containers) {
        const cl = labels([
          ['container', c.name],
          ['namespace', p.podRef.namespace],
          ['pod', p.podRef.name],
        ]);
        const cc = c.cpu?.usageCoreNanoSeconds;
        put(containerCpu, cl, cc !== undefined ? cc / 1e9 : undefined, c.cpu?.time);
        put(containerMem, cl, c.memory?.workingSetBytes, c.memory?.time);
        const start = ms(c.startTime);
        if (!Number.isNaN(start)) put(containerStart, cl, start / 1000, c.startTime);
      }
    }
  }
  const families = [
    containerCpu,
    containerMem,
    containerStart,
    nodeCpu,
    nodeMem,
    podCpu,
    podMem,
    resourceError,
    scrapeErr,
  ];
  let out = '';
  for (const f of families) {
    if (f.samples.length === 0) continue;
    out += `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.type}\n${f.samples.sort().join('\n')}\n`;
  }
  return out;
}
