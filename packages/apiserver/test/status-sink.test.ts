import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ContainerStatus, InMemoryOfflineStore, type Pod, type PodStatus } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { newStatusManager, type StatusWriteOptions } from '@kubelet-kit/status-manager';
import { FakePodDeletionSafety, FakeStatusPodManager } from '@kubelet-kit/status-manager/testing';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiserverStatusSink, createMergePatch, StatusConflictError } from '../src/index.js';

function running(name: string): ContainerStatus {
  return { name, image: '', imageID: '', ready: false, restartCount: 0, state: { running: {} } };
}

function failed(name: string): ContainerStatus {
  return {
    name,
    image: '',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode: -1 } },
  };
}

interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: unknown;
}

type JsonObject = Record<string, unknown>;

function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: JsonObject =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as JsonObject) }
      : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/** A tiny stand-in for the API server's pod endpoints, recording every request. */
class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  readonly pods = new Map<string, JsonObject>();
  conflicts = 0;
  /** When set, GET answers with this HTTP error code. */
  getError: number | undefined;
  /** When set, DELETE answers with this HTTP error code (and deletes nothing). */
  deleteError: number | undefined;
  #server: Server | undefined;

  async start(port = 0): Promise<string> {
    this.#server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text ? JSON.parse(text) : undefined;
    const path = (req.url ?? '').split('?')[0] ?? '';
    this.requests.push({ method: req.method ?? '', path, contentType: req.headers['content-type'], body });
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)(\/status)?$/.exec(path);
    const key = m ? `${m[1]}/${m[2]}` : '';
    const pod = this.pods.get(key);
    const send = (code: number, payload: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const status = (code: number, reason: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code });
    if (!m || !pod) return status(404, 'NotFound');
    if (req.method === 'GET') return this.getError ? status(this.getError, 'InternalError') : send(200, pod);
    if (req.method === 'PATCH' && m[3]) {
      if (this.conflicts > 0) {
        this.conflicts--;
        return status(409, 'Conflict');
      }
      const patch = body as JsonObject;
      const uid = (patch.metadata as JsonObject | undefined)?.uid;
      if (uid !== (pod.metadata as JsonObject).uid) return status(409, 'Conflict');
      const updated = { ...pod, status: applyMergePatch(pod.status, patch.status) };
      this.pods.set(key, updated);
      return send(200, updated);
    }
    if (req.method === 'DELETE') {
      if (this.deleteError) return status(this.deleteError, 'NotFound');
      this.pods.delete(key);
      return send(200, pod);
    }
    return status(405, 'MethodNotAllowed');
  }
}

function storedStatus(server: FakeApiServer): PodStatus {
  return (server.pods.get('ns/web')?.status ?? {}) as PodStatus;
}

function apiFor(server: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: 'kubelet' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'kubelet' }],
    currentContext: 'fake',
  });
  return kc.makeApiClient(CoreV1Api);
}

const NOW = '2026-01-01T00:00:10Z';

function apiPod(uid = 'uid-1', extra: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'ns', uid, creationTimestamp: '2026-01-01T00:00:00Z', ...extra },
    spec: { restartPolicy: 'Never', containers: [{ name: 'a', image: 'img' }] },
    status: {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      qosClass: 'BestEffort',
    },
  };
}

function writeOptions(over: Partial<StatusWriteOptions> = {}): StatusWriteOptions {
  return {
    podUid: 'uid-1',
    statusUid: 'uid-1',
    version: 1,
    podIsFinished: false,
    delayTransitioningToTerminal: false,
    now: NOW,
    ...over,
  };
}

const podRef: Pod = { metadata: { name: 'web', namespace: 'ns', uid: 'uid-1' } };

function runningStatus(): PodStatus {
  return {
    phase: 'Running',
    podIP: '10.0.0.5',
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: NOW },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
    ],
    containerStatuses: [{ ...running('a'), ready: true }],
  };
}

describe('ApiserverStatusSink', () => {
  let server: FakeApiServer;
  let api: CoreV1Api;

  beforeEach(async () => {
    server = new FakeApiServer();
    api = apiFor(await server.start());
  });

  afterEach(async () => {
    await server.close();
  });

  it('reads the pod and patches pods/status with a JSON merge patch carrying the UID', async () => {
    server.pods.set('ns/web', apiPod());
    const sink = new ApiserverStatusSink({ api });
    const result = await sink.write(podRef, runningStatus(), writeOptions());
    expect(result.outcome).toBe('updated');
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1/namespaces/ns/pods/web',
      'PATCH /api/v1/namespaces/ns/pods/web/status',
    ]);
    const patch = server.requests[1]!;
    expect(patch.contentType).toBe('application/merge-patch+json');
    expect(patch.body).toEqual({
      metadata: { uid: 'uid-1' },
      status: {
        phase: 'Running',
        podIP: '10.0.0.5',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: NOW },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
        containerStatuses: [
          { name: 'a', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } },
        ],
        // the kubelet does not set qosClass here, so the merge removes it, as upstream's two-way patch does
        qosClass: null,
      },
    });
    expect(storedStatus(server).phase).toBe('Running');
    expect(result.pod?.status?.phase).toBe('Running');
  });

  it('sends nothing when the API status already matches', async () => {
    server.pods.set('ns/web', { ...apiPod(), status: runningStatus() });
    const sink = new ApiserverStatusSink({ api });
    expect((await sink.write(podRef, runningStatus(), writeOptions())).outcome).toBe('unchanged');
    expect(server.requests.map((r) => r.method)).toEqual(['GET']);
  });

  it('retries after 409 Conflict, re-reading the pod', async () => {
    server.pods.set('ns/web', apiPod());
    server.conflicts = 2;
    const sink = new ApiserverStatusSink({ api });
    expect((await sink.write(podRef, runningStatus(), writeOptions())).outcome).toBe('updated');
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'PATCH', 'GET', 'PATCH', 'GET', 'PATCH']);
  });

  it('gives up with a Conflict error after the retries', async () => {
    server.pods.set('ns/web', apiPod());
    server.conflicts = 10;
    const sink = new ApiserverStatusSink({ api, maxConflictRetries: 1 });
    const err = await sink.write(podRef, runningStatus(), writeOptions()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StatusConflictError);
    expect((err as StatusConflictError).code).toBe('Conflict');
    expect(server.requests.filter((r) => r.method === 'PATCH')).toHaveLength(2);
  });

  it('answers notFound for a missing pod and uidMismatch for a recreated one', async () => {
    const sink = new ApiserverStatusSink({ api });
    expect((await sink.write(podRef, runningStatus(), writeOptions())).outcome).toBe('notFound');
    server.pods.set('ns/web', apiPod('uid-2'));
    expect((await sink.write(podRef, runningStatus(), writeOptions())).outcome).toBe('uidMismatch');
    expect(server.requests.some((r) => r.method === 'PATCH')).toBe(false);
  });

  it('collapses writes of one pod queued behind a write in flight to the newest', async () => {
    server.pods.set('ns/web', apiPod());
    const sink = new ApiserverStatusSink({ api });
    const first = sink.write(podRef, runningStatus(), writeOptions({ version: 1 }));
    const second = sink.write(podRef, { ...runningStatus(), message: 'two' }, writeOptions({ version: 2 }));
    const third = sink.write(podRef, { ...runningStatus(), message: 'three' }, writeOptions({ version: 3 }));
    const outcomes = (await Promise.all([first, second, third])).map((r) => r.outcome);
    expect(outcomes).toEqual(['updated', 'superseded', 'updated']);
    expect(server.requests.filter((r) => r.method === 'PATCH')).toHaveLength(2);
    expect(storedStatus(server).message).toBe('three');
  });

  it('writes a static pod status through its mirror pod, deleting nothing', async () => {
    const staticPod: Pod = {
      metadata: {
        name: 'web',
        namespace: 'ns',
        uid: 'static-1',
        annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': 'static-1' },
      },
      spec: { restartPolicy: 'Never', containers: [{ name: 'a', image: 'img' }] },
    };
    const mirror = apiPod('mirror-1', {
      annotations: { 'kubernetes.io/config.mirror': 'static-1' },
      deletionTimestamp: '2026-01-01T00:00:05Z',
    });
    server.pods.set('ns/web', mirror);
    const podManager = new FakeStatusPodManager({ pods: [staticPod], mirrorPods: [mirror as Pod] });
    const manager = newStatusManager({
      podManager,
      sinks: [new ApiserverStatusSink({ api, deletePods: true })],
      clock: new FakeClock(),
    });
    manager.setPodStatus(staticPod, { phase: 'Failed', containerStatuses: [failed('a')] });
    manager.terminatePod(staticPod);
    expect(await manager.syncBatch(false)).toBe(1);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1/namespaces/ns/pods/web',
      'PATCH /api/v1/namespaces/ns/pods/web/status',
    ]);
    expect((server.requests[1]?.body as JsonObject | undefined)?.metadata).toEqual({ uid: 'mirror-1' });
    expect(manager.getPodStatus('mirror-1')?.phase).toBe('Failed');
  });

  it('deletes a finished pod with grace 0 and a UID precondition, through the manager', async () => {
    const pod = apiPod('uid-1', { deletionTimestamp: '2026-01-01T00:00:05Z' });
    server.pods.set('ns/web', pod);
    const safety = new FakePodDeletionSafety();
    const manager = newStatusManager({
      podManager: new FakeStatusPodManager({ pods: [pod as Pod] }),
      podDeletionSafety: safety,
      sinks: [new ApiserverStatusSink({ api, deletePods: true })],
      clock: new FakeClock(),
    });
    safety.setCouldHaveRunningContainers('uid-1', true);
    manager.setPodStatus(pod as Pod, { phase: 'Failed', containerStatuses: [failed('a')] });
    await manager.syncBatch(false);
    // containers may still run: the terminal phase waits, and nothing is deleted
    expect(storedStatus(server).phase).toBe('Pending');

    safety.setCouldHaveRunningContainers('uid-1', false);
    manager.terminatePod(pod as Pod);
    await manager.syncBatch(false);
    const del = server.requests.find((r) => r.method === 'DELETE');
    expect(del?.path).toBe('/api/v1/namespaces/ns/pods/web');
    expect(del?.body).toMatchObject({ gracePeriodSeconds: 0, preconditions: { uid: 'uid-1' } });
    expect(server.pods.has('ns/web')).toBe(false);
    expect(manager.getPodStatus('uid-1')).toBeUndefined();
  });

  it('keeps the cached status when the DELETE fails, even with NotFound (syncPod)', async () => {
    // Upstream's syncPod logs any Delete error and returns before deletePodStatus; the status
    // stays cached until RemoveOrphanedStatuses.
    const pod = apiPod('uid-1', { deletionTimestamp: '2026-01-01T00:00:05Z' });
    server.pods.set('ns/web', pod);
    server.deleteError = 404;
    const podManager = new FakeStatusPodManager({ pods: [pod as Pod] });
    const manager = newStatusManager({
      podManager,
      sinks: [new ApiserverStatusSink({ api, deletePods: true })],
      clock: new FakeClock(),
    });
    manager.terminatePod(pod as Pod);
    await manager.syncBatch(false);
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'PATCH', 'DELETE']);
    expect(manager.getPodStatus('uid-1')?.phase).toBe('Failed');

    // needsUpdate: the version was written, but a deletable pod (as the watch now shows it) is
    // synced again on the full sync, which retries the DELETE.
    server.deleteError = undefined;
    podManager.addPod(server.pods.get('ns/web') as Pod);
    expect(await manager.syncBatch(true)).toBe(1);
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'PATCH', 'DELETE', 'GET', 'DELETE']);
    expect(manager.getPodStatus('uid-1')).toBeUndefined();
  });

  it('treats an empty lastState from the API server as no lastState (PatchPodStatus unchanged)', async () => {
    // The API server serializes ContainerStatus.lastState, a Go struct value, as {} when unset;
    // upstream compares Go structs, so a kubelet status without a last state is no change.
    const stored = runningStatus();
    stored.containerStatuses = stored.containerStatuses!.map((c) => ({ ...c, lastState: {} }));
    server.pods.set('ns/web', { ...apiPod(), status: stored });
    const sink = new ApiserverStatusSink({ api });
    expect((await sink.write(podRef, runningStatus(), writeOptions())).outcome).toBe('unchanged');
    expect(server.requests.map((r) => r.method)).toEqual(['GET']);
  });

  it('fails the write on a GET error other than NotFound, patching nothing (TestSyncPodNoDeadlock)', async () => {
    server.pods.set('ns/web', apiPod());
    server.getError = 500;
    const sink = new ApiserverStatusSink({ api });
    const err = await sink.write(podRef, runningStatus(), writeOptions()).catch((e: unknown) => e);
    expect((err as { code?: unknown }).code).toBe(500);
    expect(server.requests.map((r) => r.method)).toEqual(['GET']);
  });
});

describe('createMergePatch', () => {
  it('sets changed fields, nulls removed ones, replaces lists whole, and is undefined when equal', () => {
    expect(
      createMergePatch(
        { a: 1, b: { c: 2, d: 3 }, l: [1, 2], gone: 'x' },
        { a: 1, b: { c: 2, d: 4 }, l: [1], e: 'new' },
      ),
    ).toEqual({ b: { d: 4 }, l: [1], e: 'new', gone: null });
    expect(createMergePatch({ a: [1], b: {} }, { a: [1], b: {} })).toBeUndefined();
  });
});

describe('ApiserverStatusSink while the API server is away (queueWhileUnreachable)', () => {
  let server: FakeApiServer;
  let url: string;
  let clock: FakeClock;
  let store: InMemoryOfflineStore;
  let sink: ApiserverStatusSink;

  beforeEach(async () => {
    server = new FakeApiServer();
    url = await server.start();
    clock = new FakeClock();
    store = new InMemoryOfflineStore();
    sink = new ApiserverStatusSink({ api: apiFor(url), clock, store, queueWhileUnreachable: true });
  });

  afterEach(async () => {
    await server.close();
  });

  /** Waits (real I/O) until the sink sleeps before its next try, then lets that sleep pass. */
  async function nextWait(): Promise<number> {
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1), { timeout: 5_000, interval: 2 });
    const ms = clock.nextDue()! - clock.now();
    clock.advance(ms);
    return ms;
  }

  const withRestarts = (restartCount: number): PodStatus => ({
    ...runningStatus(),
    containerStatuses: [{ ...running('a'), ready: true, restartCount }],
  });
  const methods = () => server.requests.map((r) => r.method);
  const patchedRestarts = () =>
    server.requests
      .filter((r) => r.method === 'PATCH')
      .map((r) => (r.body as { status: PodStatus }).status.containerStatuses?.[0]?.restartCount);

  it('holds a write while the server answers 503, trying again 1 s doubling to 8 s', async () => {
    server.pods.set('ns/web', apiPod());
    server.getError = 503;
    const write = sink.write(podRef, runningStatus(), writeOptions());
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) waits.push(await nextWait());
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
    expect(sink.waitingForServer).toBe(1);
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1), { timeout: 5_000, interval: 2 });
    expect(methods()).toEqual(Array(6).fill('GET'));
    server.getError = undefined;
    clock.advance(8_000);
    expect((await write).outcome).toBe('updated');
    expect(sink.waitingForServer).toBe(0);
    expect(storedStatus(server).phase).toBe('Running');
    // The accepted status is kept for a restart without the server.
    expect((await store.get<PodStatus>('PodStatus', 'uid-1'))?.phase).toBe('Running');
  });

  it('holds a write while nothing listens, and sends it once the server is back on its port', async () => {
    server.pods.set('ns/web', apiPod());
    await server.close();
    const write = sink.write(podRef, runningStatus(), writeOptions());
    expect(await nextWait()).toBe(1_000);
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1), { timeout: 5_000, interval: 2 });
    expect(sink.waitingForServer).toBe(1);
    await server.start(Number(new URL(url).port));
    clock.advance(2_000);
    expect((await write).outcome).toBe('updated');
    expect(methods()).toEqual(['GET', 'PATCH']);
  });

  it('drains the writes of the outage in order, newest winning, merging again after a 409', async () => {
    server.pods.set('ns/web', apiPod());
    server.getError = 503;
    const first = sink.write(podRef, withRestarts(0), writeOptions({ version: 1 }));
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1), { timeout: 5_000, interval: 2 });
    const second = sink.write(podRef, withRestarts(1), writeOptions({ version: 2 }));
    const third = sink.write(podRef, withRestarts(2), writeOptions({ version: 3 }));
    // Meanwhile another writer (a controller) adds a condition of its own to the pod.
    const current = server.pods.get('ns/web')!;
    const status = current.status as PodStatus;
    server.pods.set('ns/web', {
      ...current,
      status: {
        ...status,
        conditions: [
          ...(status.conditions ?? []),
          { type: 'example.com/Gate', status: 'True', lastTransitionTime: NOW },
        ],
      },
    });
    server.getError = undefined;
    server.conflicts = 1;
    server.requests.length = 0;
    clock.advance(1_000);
    const outcomes = (await Promise.all([first, second, third])).map((r) => r.outcome);
    expect(outcomes).toEqual(['updated', 'superseded', 'updated']);
    // The conflict re-reads the pod before patching again; the restart count never goes back.
    expect(methods()).toEqual(['GET', 'PATCH', 'GET', 'PATCH', 'GET', 'PATCH']);
    expect(patchedRestarts()).toEqual([0, 0, 2]);
    const final = storedStatus(server);
    expect(final.containerStatuses?.[0]?.restartCount).toBe(2);
    expect(final.conditions?.map((c) => c.type)).toContain('example.com/Gate');
    expect((await store.get<PodStatus>('PodStatus', 'uid-1'))?.containerStatuses?.[0]?.restartCount).toBe(2);
  });

  it('drops a held write, and the stored status, of a pod deleted during the outage', async () => {
    server.pods.set('ns/web', apiPod());
    await store.put('PodStatus', 'uid-1', runningStatus());
    server.getError = 503;
    const write = sink.write(podRef, runningStatus(), writeOptions());
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1), { timeout: 5_000, interval: 2 });
    server.pods.delete('ns/web');
    server.getError = undefined;
    clock.advance(1_000);
    expect((await write).outcome).toBe('notFound');
    await vi.waitFor(async () => expect(await store.get('PodStatus', 'uid-1')).toBeUndefined());
  });

  it('does not hold what the server refused', async () => {
    server.pods.set('ns/web', apiPod());
    server.getError = 403;
    const err = await sink.write(podRef, runningStatus(), writeOptions()).catch((e: unknown) => e);
    expect((err as { code?: unknown }).code).toBe(403);
    expect(methods()).toEqual(['GET']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('gives a held write up when its signal aborts', async () => {
    server.pods.set('ns/web', apiPod());
    server.getError = 503;
    const abort = new AbortController();
    const write = sink.write(podRef, runningStatus(), writeOptions({ signal: abort.signal }));
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1), { timeout: 5_000, interval: 2 });
    abort.abort(new Error('agent stopping'));
    await expect(write).rejects.toThrow('agent stopping');
    expect(sink.waitingForServer).toBe(0);
  });
});
