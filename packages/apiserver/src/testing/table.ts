// Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), which kubectl
// get asks for: the columns of upstream's pkg/printers/internalversion for pods, nodes and
// events, and the default Name / Created At table for every other resource.
import type { Json, JsonObject } from './patch.js';
import type { ResourceInfo } from './resources.js';

interface Column {
  readonly name: string;
  readonly type: string;
  readonly format?: string;
  readonly priority?: number;
  readonly description?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: printing reads loosely typed objects
type Obj = Record<string, any>;

/** apimachinery's duration.HumanDuration. @internal */
export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  const y = Math.floor(d / 365);
  if (d < 365 * 8) return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
  return `${y}y`;
}

function age(now: number, ts: unknown): string {
  if (typeof ts !== 'string') return '<unknown>';
  return humanDuration(now - Date.parse(ts));
}

const none = (v: unknown) => (v === undefined || v === null || v === '' ? '<none>' : String(v));

/** Upstream printPod, less the init-container and sidecar details. */
function podRow(p: Obj, now: number): Json[] {
  const statuses: Obj[] = p.status?.containerStatuses ?? [];
  let reason: string = p.status?.reason ?? p.status?.phase ?? '';
  let restarts = 0;
  let ready = 0;
  let running = false;
  for (const c of [...statuses].reverse()) {
    restarts += c.restartCount ?? 0;
    if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
    else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
    else if (c.state?.terminated) {
      reason = c.state.terminated.signal
        ? `Signal:${c.state.terminated.signal}`
        : `ExitCode:${c.state.terminated.exitCode}`;
    } else if (c.ready && c.state?.running) {
      running = true;
      ready++;
    }
  }
  if (reason === 'Completed' && running) reason = 'Running';
  if (p.metadata?.deletionTimestamp) reason = p.status?.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  const gates: Obj[] = p.spec?.readinessGates ?? [];
  return [
    p.metadata?.name ?? '',
    `${ready}/${(p.spec?.containers ?? []).length}`,
    reason,
    String(restarts),
    age(now, p.metadata?.creationTimestamp),
    none(p.status?.podIP),
    none(p.spec?.nodeName),
    none(p.status?.nominatedNodeName),
    gates.length ? `0/${gates.length}` : '<none>',
  ];
}

function nodeRow(n: Obj, now: number): Json[] {
  const conds: Obj[] = n.status?.conditions ?? [];
  const readyCond = conds.find((c) => c.type === 'Ready');
  let status = !readyCond
    ? 'Unknown'
    : readyCond.status === 'True'
      ? 'Ready'
      : readyCond.status === 'False'
        ? 'NotReady'
        : 'Unknown';
  if (n.spec?.unschedulable) status += ',SchedulingDisabled';
  const roles = Object.keys(n.metadata?.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .filter((r) => r !== '')
    .sort();
  const addr = (t: string) => (n.status?.addresses ?? []).find((a: Obj) => a.type === t)?.address;
  const info: Obj = n.status?.nodeInfo ?? {};
  return [
    n.metadata?.name ?? '',
    status,
    roles.length ? roles.join(',') : '<none>',
    age(now, n.metadata?.creationTimestamp),
    info.kubeletVersion ?? '',
    none(addr('InternalIP')),
    none(addr('ExternalIP')),
    info.osImage ?? '<unknown>',
    info.kernelVersion ?? '<unknown>',
    info.containerRuntimeVersion ?? '<unknown>',
  ];
}

function eventRow(e: Obj, now: number): Json[] {
  const last = e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp;
  const first = e.firstTimestamp ?? e.eventTime;
  const o: Obj = e.involvedObject ?? {};
  const src = e.source?.component
    ? [e.source.component, e.source.host].filter(Boolean).join(', ')
    : (e.reportingComponent ?? '');
  return [
    age(now, last),
    e.type ?? '',
    e.reason ?? '',
    `${String(o.kind ?? '').toLowerCase()}/${o.name ?? ''}`,
    o.fieldPath ?? '',
    src,
    e.message ?? '',
    age(now, first),
    e.series?.count ?? e.count ?? 1,
    e.metadata?.name ?? '',
  ];
}

const str = (name: string, priority = 0, format?: string): Column => ({
  name,
  type: 'string',
  ...(format ? { format } : {}),
  description: name,
  priority,
});

const TABLES: Record<string, { columns: Column[]; row: (o: Obj, now: number) => Json[] }> = {
  '/pods': {
    columns: [
      str('Name', 0, 'name'),
      str('Ready'),
      str('Status'),
      { name: 'Restarts', type: 'string', description: 'Restarts', priority: 0 },
      str('Age'),
      str('IP', 1),
      str('Node', 1),
      str('Nominated Node', 1),
      str('Readiness Gates', 1),
    ],
    row: podRow,
  },
  '/nodes': {
    columns: [
      str('Name', 0, 'name'),
      str('Status'),
      str('Roles'),
      str('Age'),
      str('Version'),
      str('Internal-IP', 1),
      str('External-IP', 1),
      str('OS-Image', 1),
      str('Kernel-Version', 1),
      str('Container-Runtime', 1),
    ],
    row: nodeRow,
  },
  '/events': {
    columns: [
      str('Last Seen'),
      str('Type'),
      str('Reason'),
      str('Object'),
      str('Subobject', 1),
      str('Source', 1),
      str('Message'),
      str('First Seen', 1),
      { name: 'Count', type: 'integer', description: 'Count', priority: 1 },
      str('Name', 1, 'name'),
    ],
    row: eventRow,
  },
  '/namespaces': {
    columns: [str('Name', 0, 'name'), str('Status'), str('Age')],
    row: (o, now) => [o.metadata?.name ?? '', o.status?.phase ?? '', age(now, o.metadata?.creationTimestamp)],
  },
  '/services': {
    columns: [
      str('Name', 0, 'name'),
      str('Type'),
      str('Cluster-IP'),
      str('External-IP'),
      str('Port(s)'),
      str('Age'),
      str('Selector', 1),
    ],
    row: (o, now) => [
      o.metadata?.name ?? '',
      o.spec?.type ?? '',
      none(o.spec?.clusterIP),
      o.spec?.externalIPs?.join(',') ?? (o.spec?.type === 'LoadBalancer' ? '<pending>' : '<none>'),
      (o.spec?.ports ?? [])
        .map((p: Obj) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`)
        .join(',') || '<none>',
      age(now, o.metadata?.creationTimestamp),
      o.spec?.selector
        ? Object.entries(o.spec.selector)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')
        : '<none>',
    ],
  },
  '/configmaps': {
    columns: [
      str('Name', 0, 'name'),
      { name: 'Data', type: 'integer', description: 'Data', priority: 0 },
      str('Age'),
    ],
    row: (o, now) => [
      o.metadata?.name ?? '',
      Object.keys(o.data ?? {}).length + Object.keys(o.binaryData ?? {}).length,
      age(now, o.metadata?.creationTimestamp),
    ],
  },
  '/secrets': {
    columns: [
      str('Name', 0, 'name'),
      str('Type'),
      { name: 'Data', type: 'integer', description: 'Data', priority: 0 },
      str('Age'),
    ],
    row: (o, now) => [
      o.metadata?.name ?? '',
      o.type ?? '',
      Object.keys(o.data ?? {}).length + Object.keys(o.stringData ?? {}).length,
      age(now, o.metadata?.creationTimestamp),
    ],
  },
  '/serviceaccounts': {
    columns: [
      str('Name', 0, 'name'),
      { name: 'Secrets', type: 'integer', description: 'Secrets', priority: 0 },
      str('Age'),
    ],
    row: (o, now) => [
      o.metadata?.name ?? '',
      (o.secrets ?? []).length,
      age(now, o.metadata?.creationTimestamp),
    ],
  },
  'coordination.k8s.io/leases': {
    columns: [str('Name', 0, 'name'), str('Holder'), str('Age')],
    row: (o, now) => [
      o.metadata?.name ?? '',
      o.spec?.holderIdentity ?? '',
      age(now, o.metadata?.creationTimestamp),
    ],
  },
  'node.k8s.io/runtimeclasses': {
    columns: [str('Name', 0, 'name'), str('Handler'), str('Age')],
    row: (o, now) => [o.metadata?.name ?? '', o.handler ?? '', age(now, o.metadata?.creationTimestamp)],
  },
};

/** Whether an Accept header asks for a Table. @internal */
export function wantsTable(accept: string | undefined): boolean {
  const first = (accept ?? '').split(',')[0] ?? '';
  return /as=Table/.test(first) && /g=meta\.k8s\.io/.test(first);
}

/** A meta.k8s.io/v1 Table of `items`. @internal */
export function toTable(
  info: ResourceInfo,
  items: readonly JsonObject[],
  resourceVersion: string,
  now: number,
  includeObject: string | null,
): JsonObject {
  const t = TABLES[`${info.group}/${info.plural}`] ?? {
    columns: [
      str('Name', 0, 'name'),
      { name: 'Created At', type: 'date', description: 'Created At', priority: 0 },
    ],
    row: (o: Obj) => [o.metadata?.name ?? '', o.metadata?.creationTimestamp ?? ''],
  };
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: t.columns as unknown as Json[],
    rows: items.map((o) => ({
      cells: t.row(o as Obj, now),
      object:
        includeObject === 'None'
          ? null
          : includeObject === 'Object'
            ? o
            : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata ?? {} },
    })),
  };
}
