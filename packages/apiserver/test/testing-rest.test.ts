// FakeApiServer through @kubernetes/client-node: create/get/update/patch/delete with the
// real server's Status objects, defaults, subresources, TokenRequest and schema validation.
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import {
  ApiException,
  AuthenticationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let api: FakeApiServer;
let core: CoreV1Api;

beforeEach(async () => {
  api = new FakeApiServer();
  await api.start();
  core = api.makeKubeConfig().makeApiClient(CoreV1Api);
});
afterEach(async () => {
  await api.stop();
});

const pod = (name: string, extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels: { app: name } },
  spec: { containers: [{ name: 'main', image: 'busybox:1.36' }], ...extra },
});

async function failure(p: Promise<unknown>): Promise<{ code: number; body: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException) return { code: e.code, body: JSON.parse(String(e.body)) };
    throw e;
  }
  throw new Error('expected the request to fail');
}

describe('FakeApiServer REST', () => {
  it('holds what a fresh control plane holds', async () => {
    const ns = await core.listNamespace();
    expect(ns.items.map((n) => n.metadata?.name)).toEqual([
      'default',
      'kube-node-lease',
      'kube-public',
      'kube-system',
    ]);
    const svc = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    expect(svc.spec?.clusterIP).toBe('10.96.0.1');
    for (const n of ns.items) {
      const cm = await core.readNamespacedConfigMap({
        name: 'kube-root-ca.crt',
        namespace: String(n.metadata?.name),
      });
      expect(cm.data?.['ca.crt']).toContain('BEGIN CERTIFICATE');
    }
    await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
    expect(
      (await core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'team-a' })).data,
    ).toBeDefined();
    expect(
      (await core.readNamespacedServiceAccount({ name: 'default', namespace: 'team-a' })).metadata?.uid,
    ).toBeTruthy();
  });

  it('creates with system metadata and defaults, and answers 201', async () => {
    const created = await core.createNamespacedPod({ namespace: 'default', body: pod('web') });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.metadata?.generation).toBe(1);
    expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
    expect(created.spec?.restartPolicy).toBe('Always');
    expect(created.spec?.terminationGracePeriodSeconds).toBe(30);
    expect(created.spec?.containers[0]?.imagePullPolicy).toBe('IfNotPresent');
    expect(created.status?.phase).toBe('Pending');
    expect(created.status?.qosClass).toBe('BestEffort');
    const write = api.requests.find(
      (r) => r.method === 'POST' && r.path === '/api/v1/namespaces/default/pods',
    );
    expect(write?.status).toBe(201);
    expect(write?.contentType).toBe('application/json');
  });

  it('fills a name from generateName', async () => {
    const created = await core.createNamespacedPod({
      namespace: 'default',
      body: { ...pod(''), metadata: { generateName: 'web-' } },
    });
    expect(created.metadata?.name).toMatch(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('answers NotFound, AlreadyExists and Conflict as Status objects shaped as upstream', async () => {
    expect(await failure(core.readNamespacedPod({ name: 'nope', namespace: 'default' }))).toEqual({
      code: 404,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'pods "nope" not found',
        reason: 'NotFound',
        details: { name: 'nope', kind: 'pods' },
        code: 404,
      },
    });
    const lease = api.makeKubeConfig().makeApiClient(CoordinationV1Api);
    const f = await failure(lease.readNamespacedLease({ name: 'n1', namespace: 'kube-node-lease' }));
    expect(f.body.message).toBe('leases.coordination.k8s.io "n1" not found');
    expect(f.body.details).toEqual({ name: 'n1', group: 'coordination.k8s.io', kind: 'leases' });

    await core.createNamespacedPod({ namespace: 'default', body: pod('web') });
    const dup = await failure(core.createNamespacedPod({ namespace: 'default', body: pod('web') }));
    expect(dup.code).toBe(409);
    expect(dup.body).toMatchObject({ reason: 'AlreadyExists', message: 'pods "web" already exists' });

    const cur = await core.readNamespacedPod({ name: 'web', namespace: 'default' });
    await core.replaceNamespacedPod({ name: 'web', namespace: 'default', body: cur });
    const stale = await failure(core.replaceNamespacedPod({ name: 'web', namespace: 'default', body: cur }));
    expect(stale.code).toBe(409);
    expect(stale.body).toMatchObject({
      reason: 'Conflict',
      message:
        'Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again',
    });
    const missingNs = await failure(
      core.createNamespacedConfigMap({ namespace: 'nowhere', body: { metadata: { name: 'x' } } }),
    );
    expect(missingNs.body.message).toBe('namespaces "nowhere" not found');
  });

  it('keeps status on a main-resource update and spec on a status update', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('web') });
    const cur = await core.readNamespacedPod({ name: 'web', namespace: 'default' });
    cur.status = { phase: 'Running' };
    cur.metadata = { ...cur.metadata, labels: { app: 'changed' } };
    const main = await core.replaceNamespacedPod({ name: 'web', namespace: 'default', body: cur });
    expect(main.status?.phase).toBe('Pending');
    expect(main.metadata?.labels).toEqual({ app: 'changed' });
    main.status = { phase: 'Running' };
    main.metadata = { ...main.metadata, labels: { app: 'ignored' } };
    const status = await core.replaceNamespacedPodStatus({ name: 'web', namespace: 'default', body: main });
    expect(status.status?.phase).toBe('Running');
    expect(status.metadata?.labels).toEqual({ app: 'changed' });
  });

  it('merges strategic merge patches by merge key, and tolerates the directives', async () => {
    api.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      status: {
        conditions: [
          { type: 'Ready', status: 'False', reason: 'KubeletNotReady' },
          { type: 'MemoryPressure', status: 'False' },
        ],
        addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
      },
    });
    const patched = await core.patchNodeStatus(
      {
        name: 'n1',
        body: {
          $setElementOrder: undefined,
          status: {
            '$setElementOrder/conditions': [{ type: 'MemoryPressure' }, { type: 'Ready' }],
            conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
            addresses: [
              { type: 'Hostname', address: 'n1' },
              { type: 'InternalIP', $patch: 'delete' },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    expect(patched.status?.conditions).toEqual([
      { type: 'MemoryPressure', status: 'False' },
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    ]);
    expect(patched.status?.addresses).toEqual([{ type: 'Hostname', address: 'n1' }]);
  });

  it('applies merge patches and JSON patches', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('web') });
    const merged = await core.patchNamespacedPod(
      { name: 'web', namespace: 'default', body: { metadata: { labels: { app: null, tier: 'front' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(merged.metadata?.labels).toEqual({ tier: 'front' });
    const jp = await core.patchNamespacedPod(
      {
        name: 'web',
        namespace: 'default',
        body: [
          { op: 'test', path: '/metadata/labels/tier', value: 'front' },
          { op: 'add', path: '/metadata/annotations', value: { a: '1' } },
          { op: 'replace', path: '/spec/containers/0/image', value: 'busybox:1.37' },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    expect(jp.metadata?.annotations).toEqual({ a: '1' });
    expect(jp.spec?.containers[0]?.image).toBe('busybox:1.37');
    expect(jp.metadata?.generation).toBe(2);
    const stale = await failure(
      core.patchNamespacedPod(
        {
          name: 'web',
          namespace: 'default',
          body: { metadata: { resourceVersion: '1', labels: { x: 'y' } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    expect(stale.body.reason).toBe('Conflict');
  });

  it('deletes a pod bound to a node gracefully, and at once when unbound or terminal', async () => {
    await core.createNamespacedPod({
      namespace: 'default',
      body: pod('bound', { nodeName: 'n1', terminationGracePeriodSeconds: 5 }),
    });
    await core.createNamespacedPod({ namespace: 'default', body: pod('unbound') });
    const pending = await core.deleteNamespacedPod({ name: 'bound', namespace: 'default' });
    expect((pending as V1Pod).metadata?.deletionGracePeriodSeconds).toBe(5);
    expect((pending as V1Pod).metadata?.deletionTimestamp).toBeInstanceOf(Date);
    expect(
      (await core.readNamespacedPod({ name: 'bound', namespace: 'default' })).metadata?.deletionTimestamp,
    ).toBeDefined();
    // A longer grace period never replaces a shorter one; a shorter one does.
    const again = (await core.deleteNamespacedPod({
      name: 'bound',
      namespace: 'default',
      gracePeriodSeconds: 30,
    })) as V1Pod;
    expect(again.metadata?.deletionGracePeriodSeconds).toBe(5);
    const wrongUid = await failure(
      core.deleteNamespacedPod({
        name: 'bound',
        namespace: 'default',
        body: { gracePeriodSeconds: 0, preconditions: { uid: 'other' } },
      }),
    );
    expect(wrongUid.code).toBe(409);
    expect(String(wrongUid.body.message)).toContain('Precondition failed: UID in precondition: other');
    await core.deleteNamespacedPod({ name: 'bound', namespace: 'default', gracePeriodSeconds: 0 });
    expect(api.get('pods', 'default', 'bound')).toBeUndefined();

    await core.deleteNamespacedPod({ name: 'unbound', namespace: 'default' });
    expect(api.get('pods', 'default', 'unbound')).toBeUndefined();

    api.create({ ...pod('done', { nodeName: 'n1' }), status: { phase: 'Succeeded' } });
    await core.deleteNamespacedPod({ name: 'done', namespace: 'default' });
    expect(api.get('pods', 'default', 'done')).toBeUndefined();

    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'cm' } } });
    const status = await core.deleteNamespacedConfigMap({ name: 'cm', namespace: 'default' });
    expect(status).toMatchObject({
      kind: 'Status',
      status: 'Success',
      details: { name: 'cm', kind: 'configmaps' },
    });
  });

  it('issues TokenRequests for a ServiceAccount that exists', async () => {
    const auth = await core.createNamespacedServiceAccountToken({
      name: 'default',
      namespace: 'default',
      body: {
        spec: {
          audiences: ['api'],
          expirationSeconds: 3600,
          boundObjectRef: { kind: 'Pod', name: 'web', uid: 'u1' },
        },
      },
    });
    expect(auth.status?.token.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(String(auth.status?.token.split('.')[1]), 'base64url').toString());
    expect(claims).toMatchObject({ aud: ['api'], sub: 'system:serviceaccount:default:default' });
    expect(claims['kubernetes.io'].pod).toEqual({ name: 'web', uid: 'u1' });
    expect(auth.status?.expirationTimestamp.getTime()).toBe((claims.iat + 3600) * 1000);
    expect(api.issuedTokens).toHaveLength(1);
    const missing = await failure(
      core.createNamespacedServiceAccountToken({
        name: 'nope',
        namespace: 'default',
        body: { spec: { audiences: [] } },
      }),
    );
    expect(missing.body.message).toBe('serviceaccounts "nope" not found');
    void AuthenticationV1Api;
  });

  it('validates against the schemas: 422 for a missing required field, 400 for a wrong type or a strict unknown field', async () => {
    const required = await failure(
      core.createNamespacedPod({
        namespace: 'default',
        body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' }, spec: {} as V1Pod['spec'] },
      }),
    );
    expect(required.code).toBe(422);
    expect(required.body).toMatchObject({
      reason: 'Invalid',
      message: 'Pod "x" is invalid: spec.containers: Required value',
      details: {
        name: 'x',
        kind: 'Pod',
        causes: [{ reason: 'FieldValueRequired', field: 'spec.containers' }],
      },
    });
    const typed = await failure(
      core.createNamespacedPod({
        namespace: 'default',
        body: { ...pod('x'), spec: { containers: [{ name: 'c', image: 3 as unknown as string }] } },
      }),
    );
    expect(typed.code).toBe(400);
    expect(typed.body.reason).toBe('BadRequest');
    // client-node drops fields its models lack, so the unknown field goes over plain fetch.
    const body = JSON.stringify({ ...pod('x'), spec: { containers: [{ name: 'c', image: 'i', bogus: 1 }] } });
    const post = (q: string) =>
      fetch(`${api.url}/api/v1/namespaces/default/pods?fieldValidation=${q}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const strict = await post('Strict');
    expect(strict.status).toBe(400);
    expect(await strict.json()).toMatchObject({
      message: 'strict decoding error: unknown field "spec.containers[0].bogus"',
    });
    const warn = await post('Warn');
    expect(warn.status).toBe(201);
    expect(warn.headers.get('warning')).toBe('299 - "unknown field \\"spec.containers[0].bogus\\""');
  });

  it('rejects an unsupported field selector with 400, as upstream', async () => {
    const bad = await failure(
      core.listNamespacedPod({ namespace: 'default', fieldSelector: 'spec.bogus=1' }),
    );
    expect(bad).toMatchObject({ code: 400, body: { message: 'field label not supported: spec.bogus' } });
  });
});

describe('FakeApiServer over HTTPS', () => {
  it('serves a self-signed certificate that its kubeconfig trusts', async () => {
    const tls = new FakeApiServer({ tls: 'self-signed' });
    await tls.start();
    try {
      expect(tls.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(tls.kubeconfig()).toContain('certificate-authority-data: ');
      expect(tls.kubeconfig()).not.toContain('insecure-skip-tls-verify');
      const ns = await tls.makeKubeConfig().makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
      expect(ns.status?.phase).toBe('Active');
    } finally {
      await tls.stop();
    }
  });
});

describe('FakeApiServer uid preconditions', () => {
  it('refuses a status patch whose metadata.uid is not the stored pod', async () => {
    const api2 = new FakeApiServer();
    await api2.start();
    try {
      const core2 = api2.makeKubeConfig().makeApiClient(CoreV1Api);
      const p = await core2.createNamespacedPod({ namespace: 'default', body: pod('web') });
      const patch = (uid: string) =>
        core2.patchNamespacedPodStatus(
          { name: 'web', namespace: 'default', body: { metadata: { uid }, status: { phase: 'Running' } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      expect((await patch(String(p.metadata?.uid))).status?.phase).toBe('Running');
      const f = await failure(patch('other'));
      expect(f.code).toBe(409);
      expect(f.body.message).toBe(
        `Operation cannot be fulfilled on pods "web": Precondition failed: UID in precondition: other, UID in object meta: ${p.metadata?.uid}`,
      );
    } finally {
      await api2.stop();
    }
  });
});

describe('FakeApiServer admission', () => {
  it('adds the kube-api-access volume and default tolerations, and refuses a missing ServiceAccount', async () => {
    const adm = new FakeApiServer({ admission: true });
    await adm.start();
    try {
      const c = adm.makeKubeConfig().makeApiClient(CoreV1Api);
      const p = await c.createNamespacedPod({ namespace: 'default', body: pod('web') });
      const vol = p.spec?.volumes?.[0];
      expect(vol?.name).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(vol?.projected?.sources?.[0]?.serviceAccountToken).toEqual({
        expirationSeconds: 3607,
        path: 'token',
      });
      expect(vol?.projected?.sources?.[1]?.configMap?.name).toBe('kube-root-ca.crt');
      expect(p.spec?.containers[0]?.volumeMounts).toEqual([
        { name: vol?.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
      ]);
      expect(p.spec?.tolerations?.map((t) => [t.key, t.effect, t.tolerationSeconds])).toEqual([
        ['node.kubernetes.io/not-ready', 'NoExecute', 300],
        ['node.kubernetes.io/unreachable', 'NoExecute', 300],
      ]);
      const none = await failure(
        c.createNamespacedPod({ namespace: 'default', body: pod('x', { serviceAccountName: 'ghost' }) }),
      );
      expect(none).toMatchObject({
        code: 403,
        body: {
          reason: 'Forbidden',
          message:
            'pods "x" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found',
        },
      });
      const opted = await c.createNamespacedPod({
        namespace: 'default',
        body: pod('y', { automountServiceAccountToken: false }),
      });
      expect(opted.spec?.volumes).toBeUndefined();
    } finally {
      await adm.stop();
    }
  });
});
