// FakeApiServer watches through @kubernetes/client-node's Watch: replay from a
// resourceVersion, 410 beyond the history, bookmarks, timeouts, selectors (with the
// ADDED/DELETED a selector transition turns into) and the fault hooks.
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { FakeClock } from '@kubelet-kit/core/testing';
import { CoreV1Api, type KubernetesObject, Watch } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';

let api: FakeApiServer;
const clock = new FakeClock();

afterEach(async () => {
  await api.stop();
});

async function start(options: ConstructorParameters<typeof FakeApiServer>[0] = {}) {
  api = new FakeApiServer({ clock, ...options });
  await api.start();
  return api.makeKubeConfig();
}

const cm = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default', labels },
});

interface Seen {
  events: { type: string; name: string | undefined; obj: KubernetesObject }[];
  done: Error | null | undefined;
  closed: boolean;
  abort(): void;
}

async function watch(
  kc: ReturnType<FakeApiServer['makeKubeConfig']>,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
): Promise<Seen> {
  const seen: Seen = { events: [], done: undefined, closed: false, abort: () => {} };
  const ctl = await new Watch(kc).watch(
    path,
    query,
    (type, obj: KubernetesObject) => seen.events.push({ type, name: obj.metadata?.name, obj }),
    (err) => {
      seen.closed = true;
      seen.done = err ?? null;
    },
  );
  seen.abort = () => ctl.abort();
  return seen;
}

describe('FakeApiServer watch', () => {
  it('replays the changes after a resourceVersion, then streams new ones', async () => {
    const kc = await start();
    const first = api.create(cm('a'));
    api.create(cm('b'));
    api.update({ ...api.get('cm', 'default', 'a'), data: { k: 'v' } });
    const w = await watch(kc, '/api/v1/namespaces/default/configmaps', {
      resourceVersion: first.metadata?.resourceVersion,
    });
    api.delete('configmaps', 'default', 'b');
    await vi.waitFor(() => expect(w.events).toHaveLength(3));
    expect(w.events.map((e) => [e.type, e.name])).toEqual([
      ['ADDED', 'b'],
      ['MODIFIED', 'a'],
      ['DELETED', 'b'],
    ]);
    // Watch events carry kind and apiVersion, as from the real server.
    expect(w.events[0]?.obj.kind).toBe('ConfigMap');
    w.abort();
  });

  it('starts with ADDED for every object when no resourceVersion is given', async () => {
    const kc = await start();
    api.create(cm('a'));
    const w = await watch(kc, '/api/v1/namespaces/default/configmaps', {});
    await vi.waitFor(() => expect(w.events.map((e) => e.name).sort()).toEqual(['a', 'kube-root-ca.crt']));
    w.abort();
  });

  it('answers a resourceVersion older than the history with a 410 Expired ERROR event', async () => {
    const kc = await start({ historySize: 2 });
    const old = api.create(cm('a'));
    for (const n of ['b', 'c', 'd']) api.create(cm(n));
    const w = await watch(kc, '/api/v1/namespaces/default/configmaps', {
      resourceVersion: old.metadata?.resourceVersion,
    });
    await vi.waitFor(() => expect(w.closed).toBe(true));
    const err = w.events.find((e) => e.type === 'ERROR')?.obj as unknown as Record<string, unknown>;
    expect(err).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
    expect(String(err.message)).toMatch(/^too old resource version: \d+ \(\d+\)$/);
    // The history is per resource, as upstream's watch caches: ConfigMap churn expires no pod watch.
    const pods = await watch(kc, '/api/v1/pods', { resourceVersion: old.metadata?.resourceVersion });
    api.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    await vi.waitFor(() => expect(pods.events.map((e) => [e.type, e.name])).toEqual([['ADDED', 'p']]));
    pods.abort();
    // compact() forgets everything.
    api.compact();
    const w2 = await watch(kc, '/api/v1/namespaces/default/configmaps', {
      resourceVersion: String(Number(api.resourceVersion) - 1),
    });
    await vi.waitFor(() => expect(w2.events[0]?.type).toBe('ERROR'));
  });

  it('sends bookmarks to watches that allow them, and ends a watch at timeoutSeconds', async () => {
    const kc = await start({ bookmarkIntervalMs: 1000 });
    const w = await watch(kc, '/api/v1/pods', {
      allowWatchBookmarks: true,
      resourceVersion: api.resourceVersion,
      timeoutSeconds: 5,
    });
    const plain = await watch(kc, '/api/v1/pods', { resourceVersion: api.resourceVersion });
    await vi.waitFor(() => expect(api.openWatches).toHaveLength(2));
    clock.advance(1000);
    await vi.waitFor(() => expect(w.events.map((e) => e.type)).toEqual(['BOOKMARK']));
    expect(w.events[0]?.obj.metadata?.resourceVersion).toBe(api.resourceVersion);
    expect(w.events[0]?.obj.kind).toBe('Pod');
    api.sendBookmarks();
    await vi.waitFor(() => expect(w.events).toHaveLength(2));
    clock.advance(4000);
    await vi.waitFor(() => expect(w.closed).toBe(true));
    expect(plain.events).toEqual([]);
    expect(plain.closed).toBe(false);
    plain.abort();
  });

  it('sends the initial-events-end bookmark with sendInitialEvents', async () => {
    const kc = await start();
    const w = await watch(kc, '/api/v1/namespaces/default/configmaps', {
      sendInitialEvents: true,
      allowWatchBookmarks: true,
      resourceVersionMatch: 'NotOlderThan',
    });
    await vi.waitFor(() => expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']));
    expect(w.events[1]?.obj.metadata?.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    w.abort();
  });

  it('filters by label and field selectors, turning selector transitions into ADDED and DELETED', async () => {
    const kc = await start();
    api.create(cm('a', { tier: 'x' }));
    const w = await watch(kc, '/api/v1/namespaces/default/configmaps', {
      labelSelector: 'tier in (x,y),!legacy',
      resourceVersion: api.resourceVersion,
    });
    api.create(cm('b', { tier: 'y' }));
    api.create(cm('c', { tier: 'z' }));
    api.update({
      ...api.get('cm', 'default', 'a'),
      metadata: { ...api.get('cm', 'default', 'a')?.metadata, labels: { tier: 'x', legacy: '1' } },
    });
    api.update({
      ...api.get('cm', 'default', 'c'),
      metadata: { ...api.get('cm', 'default', 'c')?.metadata, labels: { tier: 'x' } },
    });
    await vi.waitFor(() => expect(w.events).toHaveLength(3));
    expect(w.events.map((e) => [e.type, e.name])).toEqual([
      ['ADDED', 'b'],
      ['DELETED', 'a'],
      ['ADDED', 'c'],
    ]);
    w.abort();
    const core = kc.makeApiClient(CoreV1Api);
    api.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p1', namespace: 'default' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
    });
    api.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p2', namespace: 'default' },
      spec: { nodeName: 'n2', containers: [{ name: 'c', image: 'i' }] },
    });
    const list = await core.listPodForAllNamespaces({
      fieldSelector: 'spec.nodeName=n1,status.phase!=Failed',
    });
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['p1']);
    const not = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName!=n1' });
    expect(not.items.map((p) => p.metadata?.name)).toEqual(['p2']);
    const svc = await core.listServiceForAllNamespaces({
      fieldSelector: 'spec.clusterIP!=None,metadata.namespace==default',
    });
    expect(svc.items.map((s) => s.metadata?.name)).toEqual(['kubernetes']);
  });

  it('pages a list with limit and continue', async () => {
    const kc = await start();
    for (const n of ['a', 'b', 'c']) api.create(cm(n));
    const core = kc.makeApiClient(CoreV1Api);
    const one = await core.listNamespacedConfigMap({ namespace: 'default', limit: 2 });
    expect(one.items.map((c) => c.metadata?.name)).toEqual(['a', 'b']);
    expect(one.metadata?.remainingItemCount).toBe(2);
    const two = await core.listNamespacedConfigMap({
      namespace: 'default',
      limit: 2,
      _continue: one.metadata?._continue,
    });
    expect(two.items.map((c) => c.metadata?.name)).toEqual(['c', 'kube-root-ca.crt']);
    expect(two.metadata?._continue).toBeUndefined();
  });

  it('dropConnections ends every watch; silenceWatch keeps one open and quiet', async () => {
    const kc = await start();
    const pods = await watch(kc, '/api/v1/pods', { resourceVersion: api.resourceVersion });
    const cms = await watch(kc, '/api/v1/configmaps', { resourceVersion: api.resourceVersion });
    await vi.waitFor(() => expect(api.openWatches).toHaveLength(2));
    const unsilence = api.silenceWatch((w) => w.resource === 'configmaps');
    api.create(cm('quiet'));
    api.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    await vi.waitFor(() => expect(pods.events).toHaveLength(1));
    expect(cms.events).toEqual([]);
    unsilence();
    api.create(cm('loud'));
    await vi.waitFor(() => expect(cms.events.map((e) => e.name)).toEqual(['loud']));
    api.dropConnections();
    await vi.waitFor(() => expect(pods.closed && cms.closed).toBe(true));
    expect(api.openWatches).toEqual([]);
  });

  it('refuseFor closes the listener and reopens it on the same port; restart keeps state', async () => {
    const kc = await start();
    const core = kc.makeApiClient(CoreV1Api);
    api.create(cm('kept'));
    const port = api.port;
    await api.refuseFor(2000);
    await expect(core.readNamespacedConfigMap({ name: 'kept', namespace: 'default' })).rejects.toThrow(
      /ECONNREFUSED/,
    );
    clock.advance(2000);
    await vi.waitFor(async () => {
      expect(
        (await core.readNamespacedConfigMap({ name: 'kept', namespace: 'default' })).metadata?.name,
      ).toBe('kept');
    });
    expect(api.port).toBe(port);
    await api.refuseFor(1000, { status503: true });
    await expect(core.readNamespacedConfigMap({ name: 'kept', namespace: 'default' })).rejects.toMatchObject({
      code: 503,
    });
    clock.advance(1000);
    await api.restart();
    expect(api.port).toBe(port);
    expect((await core.readNamespacedConfigMap({ name: 'kept', namespace: 'default' })).metadata?.name).toBe(
      'kept',
    );
  });

  it('waitFor resolves once the predicate holds, including for a deletion', async () => {
    await start();
    api.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default' },
      spec: { nodeName: 'n', containers: [{ name: 'c', image: 'i' }] },
    });
    const gone = api.waitFor('pods', 'default', 'p', (p) => p === undefined);
    const marked = api.waitFor('pods', 'default', 'p', (p) => p?.metadata?.deletionTimestamp !== undefined);
    api.delete('pods', 'default', 'p');
    expect((await marked)?.metadata?.deletionGracePeriodSeconds).toBe(30);
    api.delete('pods', 'default', 'p', { gracePeriodSeconds: 0 });
    expect(await gone).toBeUndefined();
    const never = api.waitFor('pods', 'default', 'q', (p) => p !== undefined, 500);
    clock.advance(500);
    await expect(never).rejects.toThrow('waitFor pods default/q: timed out after 500 ms');
  });
});

describe('FakeApiServer misbehaving', () => {
  it('ignoreFieldSelectors makes lists and watches of a resource ignore their fieldSelector', async () => {
    const kc = await start();
    const pod = (name: string, nodeName: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { nodeName, containers: [{ name: 'c', image: 'i' }] },
    });
    api.create(pod('mine', 'n1'));
    api.create(pod('theirs', 'n2'));
    const core = kc.makeApiClient(CoreV1Api);
    const names = async () =>
      (await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1' })).items.map(
        (p) => p.metadata?.name,
      );
    expect(await names()).toEqual(['mine']);
    api.ignoreFieldSelectors('pods');
    expect(await names()).toEqual(['mine', 'theirs']);
    const w = await watch(kc, '/api/v1/pods', {
      fieldSelector: 'spec.nodeName=n1',
      resourceVersion: api.resourceVersion,
    });
    api.create(pod('late', 'n3'));
    await vi.waitFor(() => expect(w.events.map((e) => e.name)).toEqual(['late']));
    w.abort();
  });
});
