// FakeApiServer's pods/ephemeralcontainers subresource, as `kubectl debug` uses it: a
// strategic-merge PATCH (or PUT) that may only add ephemeral containers.
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let api: FakeApiServer;

beforeEach(async () => {
  api = new FakeApiServer();
  await api.start();
  await call('POST', '/api/v1/namespaces/default/pods', 'application/json', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] },
  });
});
afterEach(async () => {
  await api.stop();
});

async function call(method: string, path: string, type: string, body: unknown) {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { 'content-type': type },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: reads a JSON answer loosely
  return { code: res.status, body: (await res.json()) as Record<string, any> };
}

const debugger1 = {
  name: 'debugger-1',
  image: 'busybox:1.36',
  targetContainerName: 'main',
  stdin: true,
  tty: true,
};
const path = '/api/v1/namespaces/default/pods/web/ephemeralcontainers';

describe('pods/ephemeralcontainers', () => {
  it('adds an ephemeral container by strategic-merge patch, with defaults, and leaves the rest', async () => {
    const r = await call('PATCH', path, 'application/strategic-merge-patch+json', {
      spec: { ephemeralContainers: [debugger1], containers: [{ name: 'main', image: 'other' }] },
    });
    expect(r.code).toBe(200);
    expect(r.body.spec.ephemeralContainers).toEqual([
      {
        ...debugger1,
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        imagePullPolicy: 'IfNotPresent',
      },
    ]);
    // Only spec.ephemeralContainers is written through this subresource.
    expect(r.body.spec.containers[0].image).toBe('busybox:1.36');
    const got = await call('GET', '/api/v1/namespaces/default/pods/web', 'application/json', undefined);
    expect(got.body.spec.ephemeralContainers[0].name).toBe('debugger-1');
  });

  it('refuses changing or removing an existing one, and a duplicate name, with 422', async () => {
    await call('PATCH', path, 'application/strategic-merge-patch+json', {
      spec: { ephemeralContainers: [debugger1] },
    });
    const pod = (await call('GET', path, 'application/json', undefined)).body;
    pod.spec.ephemeralContainers = [];
    const removed = await call('PUT', path, 'application/json', pod);
    expect(removed.code).toBe(422);
    expect(removed.body.message).toContain('existing ephemeral containers "debugger-1" may not be changed');
    const dup = await call('PATCH', path, 'application/strategic-merge-patch+json', {
      spec: { ephemeralContainers: [{ name: 'main', image: 'busybox:1.36' }] },
    });
    expect(dup.code).toBe(422);
    expect(dup.body.message).toContain('Duplicate value: "main"');
  });

  it('is listed in discovery', async () => {
    const res = await fetch(`${api.url}/api/v1`);
    const list = (await res.json()) as { resources: Array<{ name: string; verbs: string[] }> };
    expect(list.resources.find((r) => r.name === 'pods/ephemeralcontainers')?.verbs).toEqual([
      'get',
      'patch',
      'update',
    ]);
  });
});
