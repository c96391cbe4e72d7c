// TokenReview and SubjectAccessReview: the adapters over client-node against the in-memory
// API server, whose hooks decide, and the review resources in its discovery.
import { subjectAccessReviewer, tokenReviewer } from '@kubelet-kit/apiserver';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { AuthenticationV1Api, AuthorizationV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let api: FakeApiServer;
beforeEach(async () => {
  api = new FakeApiServer();
  await api.start();
});
afterEach(async () => {
  await api.stop();
});

const attrs = {
  verb: 'get',
  namespace: '',
  group: '',
  version: 'v1',
  resource: 'nodes',
  subresource: 'proxy',
  name: 'node1',
};

describe('tokenReviewer', () => {
  it('returns the user of a token the hook accepts, and refuses others', async () => {
    api.onTokenReview((token, audiences) =>
      token === 'good'
        ? { username: 'bob', uid: 'u1', groups: ['devs'] }
        : audiences.length
          ? { error: 'x' }
          : undefined,
    );
    const review = tokenReviewer(api.makeKubeConfig().makeApiClient(AuthenticationV1Api));
    expect(await review('good', [])).toEqual({
      authenticated: true,
      user: { name: 'bob', uid: 'u1', groups: ['devs'] },
    });
    expect(await review('bad', [])).toEqual({ authenticated: false, error: 'invalid bearer token' });
    expect(await review('bad', ['aud'])).toEqual({ authenticated: false, error: 'x' });
    expect(api.answeredReviews.map((r) => r.kind)).toEqual(['TokenReview', 'TokenReview', 'TokenReview']);
  });

  it('throws an AuthReviewError when the server refuses the review', async () => {
    const review = tokenReviewer(api.makeKubeConfig().makeApiClient(AuthenticationV1Api));
    await expect(review('', [])).rejects.toMatchObject({ name: 'AuthReviewError', status: 400 });
  });
});

describe('subjectAccessReviewer', () => {
  it('sends the user and resource attributes, and returns the verdict', async () => {
    const asked: unknown[] = [];
    api.onAccessReview((req) => {
      asked.push(req);
      return req.user === 'bob' ? true : { allowed: false, denied: true, reason: 'no' };
    });
    const review = subjectAccessReviewer(api.makeKubeConfig().makeApiClient(AuthorizationV1Api));
    expect(await review({ name: 'bob', groups: ['system:authenticated'] }, attrs)).toEqual({ allowed: true });
    expect(await review({ name: 'eve', groups: [] }, attrs)).toEqual({
      allowed: false,
      denied: true,
      reason: 'no',
    });
    expect(asked[0]).toEqual({ user: 'bob', groups: ['system:authenticated'], resourceAttributes: attrs });
  });

  it('allows everything without a hook', async () => {
    const review = subjectAccessReviewer(api.makeKubeConfig().makeApiClient(AuthorizationV1Api));
    expect(await review({ name: 'x', groups: [] }, attrs)).toEqual({ allowed: true });
  });
});

describe('FakeApiServer review discovery', () => {
  it('lists tokenreviews and subjectaccessreviews as create-only', async () => {
    const base = api.url;
    const groups = (await (await fetch(`${base}/apis`)).json()) as { groups: { name: string }[] };
    expect(groups.groups.map((g) => g.name)).toEqual(
      expect.arrayContaining(['authentication.k8s.io', 'authorization.k8s.io']),
    );
    const list = (await (await fetch(`${base}/apis/authorization.k8s.io/v1`)).json()) as {
      resources: { name: string; verbs: string[] }[];
    };
    expect(list.resources).toContainEqual(
      expect.objectContaining({ name: 'subjectaccessreviews', verbs: ['create'] }),
    );
    expect((await fetch(`${base}/apis/authentication.k8s.io/v1/tokenreviews`)).status).toBe(405);
  });
});
