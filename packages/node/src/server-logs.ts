import type http from 'node:http';
import type { ContainerStatus, Pod, PodStatus } from '@kubelet-kit/core';
import type { LogStreamWriter, PodLogOptions } from '@kubelet-kit/kuberuntime';

// The kubelet server's `/containerLogs/{namespace}/{pod}/{container}` (upstream
// `pkg/kubelet/server/server.go` getContainerLogs and `kubelet_pods.go` GetKubeletContainerLogs).

/** What `/containerLogs` needs of the agent. @public */
export interface ContainerLogsHost {
  /** The pod by namespace and name, with its current status. */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** Streams one container instance's log (kuberuntime's GetContainerLogs). */
  getContainerLogs(
    containerId: string,
    options: PodLogOptions,
    stdout: LogStreamWriter,
    stderr: LogStreamWriter,
    signal: AbortSignal,
  ): Promise<void>;
}

/** A request the handler refuses, with upstream's status and text. */
class LogsRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Upstream's query-string to bool conversion: absent, `0`, `false`, `no` are false. */
function parseBool(v: string | null): boolean | undefined {
  if (v === null) return undefined;
  const l = v.toLowerCase();
  return !(l === '0' || l === 'false' || l === 'no');
}

function parseInt64(v: string | null): number | undefined {
  if (v === null) return undefined;
  if (!/^[+-]?\d+$/.test(v)) throw new LogsRequestError(400, '{"message": "Unable to decode query."}');
  return Number(v);
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * The v1 PodLogOptions of a query, decoded and validated as upstream: undecodable values 400,
 * invalid ones 422 (upstream's `ValidatePodLogOptions`), with upstream's JSON-looking messages.
 * @internal
 */
export function decodePodLogOptions(query: URLSearchParams): PodLogOptions {
  const q = new URLSearchParams(query);
  // Backwards compatibility: `tail` for `tailLines`, `all` meaning no tail.
  const tail = q.get('tail');
  if (tail) {
    if (tail === 'all') q.delete('tailLines');
    else q.set('tailLines', tail);
  }
  const sinceTimeText = q.get('sinceTime');
  let sinceTime: number | undefined;
  if (sinceTimeText !== null && sinceTimeText !== '' && sinceTimeText !== 'null') {
    const ms = rfc3339.test(sinceTimeText) ? Date.parse(sinceTimeText) : Number.NaN;
    if (Number.isNaN(ms)) throw new LogsRequestError(400, '{"message": "Unable to decode query."}');
    sinceTime = ms;
  }
  const opts = {
    follow: parseBool(q.get('follow')),
    previous: parseBool(q.get('previous')),
    timestamps: parseBool(q.get('timestamps')),
    tailLines: parseInt64(q.get('tailLines')),
    limitBytes: parseInt64(q.get('limitBytes')),
    sinceSeconds: parseInt64(q.get('sinceSeconds')),
    sinceTime,
  };
  const invalid =
    (opts.tailLines !== undefined && opts.tailLines < 0) ||
    (opts.limitBytes !== undefined && opts.limitBytes < 1) ||
    (opts.sinceSeconds !== undefined && opts.sinceTime !== undefined) ||
    (opts.sinceSeconds !== undefined && opts.sinceSeconds < 1);
  if (invalid) throw new LogsRequestError(422, '{"message": "Invalid request."}');
  const out: { -readonly [K in keyof PodLogOptions]: PodLogOptions[K] } = {};
  for (const [k, v] of Object.entries(opts) as [keyof PodLogOptions, never][])
    if (v !== undefined) out[k] = v;
  return out;
}

function findStatus(list: readonly ContainerStatus[] | undefined, name: string): ContainerStatus | undefined {
  return list?.find((s) => s.name === name);
}

/**
 * Upstream `validateContainerLogStatus`: the ID of the container instance whose log is asked
 * for (the current one, or with `previous` the last terminated one), or why there is none.
 * @internal
 */
export function validateContainerLogStatus(
  podName: string,
  status: PodStatus,
  containerName: string,
  previous: boolean,
): string {
  const cs =
    findStatus(status.containerStatuses, containerName) ??
    findStatus(status.initContainerStatuses, containerName) ??
    findStatus(status.ephemeralContainerStatuses, containerName);
  const fail = (m: string) => new LogsRequestError(400, m);
  if (!cs) throw fail(`container "${containerName}" in pod "${podName}" is not available`);
  const last = cs.lastState?.terminated;
  const { waiting, running, terminated } = cs.state ?? {};
  let id: string | undefined;
  if (previous) {
    if (!last?.containerID)
      throw fail(`previous terminated container "${containerName}" in pod "${podName}" not found`);
    id = last.containerID;
  } else if (running) {
    id = cs.containerID;
  } else if (terminated) {
    // When the next instance did not start, the terminated state carries no ID: the last one's log.
    id = terminated.containerID || last?.containerID;
    if (!id) throw fail(`container "${containerName}" in pod "${podName}" is terminated`);
  } else if (last) {
    if (!last.containerID) throw fail(`container "${containerName}" in pod "${podName}" is terminated`);
    id = last.containerID;
  } else if (waiting) {
    const reason = waiting.reason ?? '';
    if (reason === 'ErrImagePull')
      throw fail(
        `container "${containerName}" in pod "${podName}" is waiting to start: image can't be pulled`,
      );
    if (reason === 'ImagePullBackOff')
      throw fail(
        `container "${containerName}" in pod "${podName}" is waiting to start: trying and failing to pull image`,
      );
    throw fail(`container "${containerName}" in pod "${podName}" is waiting to start: ${reason}`);
  } else {
    throw fail(`container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
  }
  if (!id) throw fail(`container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
  // `<runtime>://<id>`: the runtime's own ID.
  const sep = id.indexOf('://');
  return sep >= 0 ? id.slice(sep + 3) : id;
}

function hasContainerSpec(pod: Pod, name: string): boolean {
  const spec = pod.spec;
  return [spec?.containers, spec?.initContainers, spec?.ephemeralContainers].some((l) =>
    (l ?? []).some((c) => c.name === name),
  );
}

/** A writer onto the response that waits when the client reads slower than the log is read. */
function responseWriter(res: http.ServerResponse): LogStreamWriter {
  return {
    write: (data) => {
      if (res.destroyed || res.writableEnded) return;
      if (res.write(data)) return;
      return new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    },
  };
}

/**
 * Serves `/containerLogs/{namespace}/{pod}/{container}`; false when the path is not one.
 * @internal
 */
export async function serveContainerLogs(
  host: ContainerLogsHost,
  url: URL,
  res: http.ServerResponse,
): Promise<boolean> {
  if (!url.pathname.startsWith('/containerLogs/')) return false;
  const parts = url.pathname.slice('/containerLogs/'.length).split('/').map(decodeURIComponent);
  if (parts.length > 3) return false;
  const [namespace = '', podName = '', containerName = ''] = parts;
  const plain = { 'content-type': 'text/plain; charset=utf-8' };
  const refuse = (status: number, message: string) => {
    res.writeHead(status, plain);
    res.end(message);
  };
  try {
    if (!podName) throw new LogsRequestError(400, '{"message": "Missing podID."}');
    if (!containerName) throw new LogsRequestError(400, '{"message": "Missing container name."}');
    if (!namespace) throw new LogsRequestError(400, '{"message": "Missing podNamespace."}');
    const options = decodePodLogOptions(url.searchParams);
    const pod = host.getPodByName(namespace, podName);
    if (!pod) throw new LogsRequestError(404, `pod "${podName}" does not exist`);
    if (!hasContainerSpec(pod, containerName))
      throw new LogsRequestError(404, `container "${containerName}" not found in pod "${podName}"`);
    const containerId = validateContainerLogStatus(
      podName,
      pod.status ?? {},
      containerName,
      options.previous ?? false,
    );
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    // Headers go out at once, so a follow of a quiet container is seen to have started.
    res.writeHead(200, { ...plain, 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const out = responseWriter(res);
    try {
      await host.getContainerLogs(containerId, options, out, out, abort.signal);
    } catch (err) {
      // The status is sent: the reason ends the body, as upstream's late WriteError does.
      if (!res.destroyed) res.write(String(err instanceof Error ? err.message : err));
    }
    if (!res.destroyed) res.end();
    return true;
  } catch (err) {
    if (err instanceof LogsRequestError) {
      refuse(err.status, err.message);
      return true;
    }
    throw err;
  }
}
