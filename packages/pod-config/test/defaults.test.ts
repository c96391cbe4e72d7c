import { ConfigHashAnnotationKey } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  applyStaticPodDefaults,
  decodeStaticPods,
  defaultImagePullPolicy,
  generatePodName,
  PodValidationError,
  setPodDefaults,
  staticPodUID,
} from '../src/index.js';

const manifest = `
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx
    ports:
    - containerPort: 80
    livenessProbe:
      httpGet:
        port: 80
  volumes:
  - name: data
    hostPath:
      path: /srv
  - name: scratch
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef:
          fieldPath: metadata.labels
`;

describe('static pod defaulting (common.go applyDefaults)', () => {
  it('suffixes the name with the lowercased node name (TestStaticPodNameGenerate)', () => {
    expect(generatePodName('etcd', 'Node-A.Example')).toBe('etcd-node-a.example');
    const [pod] = decodeStaticPods(manifest, { nodeName: 'MyNode', source: 'file', file: '/etc/m/web.yaml' });
    expect(pod?.metadata?.name).toBe('web-mynode');
  });

  it('defaults namespace, nodeName, hash annotation, phase and the NoExecute toleration for file pods', () => {
    const [pod] = decodeStaticPods(manifest, { nodeName: 'n1', source: 'file', file: '/etc/m/web.yaml' });
    expect(pod?.metadata?.namespace).toBe('default');
    expect(pod?.spec?.nodeName).toBe('n1');
    expect(pod?.metadata?.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(pod?.metadata?.annotations?.[ConfigHashAnnotationKey]).toBe(pod?.metadata?.uid);
    expect(pod?.status?.phase).toBe('Pending');
    expect(pod?.spec?.tolerations).toEqual([{ operator: 'Exists', effect: 'NoExecute' }]);
  });

  it('adds no toleration to url pods', () => {
    const [pod] = decodeStaticPods(manifest, { nodeName: 'n1', source: 'http', url: 'http://x/pods' });
    expect(pod?.spec?.tolerations).toBeUndefined();
  });

  it('does not duplicate an existing equal toleration', () => {
    const pod = applyStaticPodDefaults(
      {
        metadata: { name: 'a' },
        spec: {
          containers: [{ name: 'c', image: 'i' }],
          tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
        },
      },
      { nodeName: 'n', kind: 'file', location: '/f' },
    );
    expect(pod.spec?.tolerations).toHaveLength(1);
  });

  it('derives a stable UID that differs per host and per path, and keeps a manifest UID', () => {
    const uid = (node: string, file: string) =>
      decodeStaticPods(manifest, { nodeName: node, source: 'file', file })[0]?.metadata?.uid;
    expect(uid('n1', '/a.yaml')).toBe(uid('n1', '/a.yaml'));
    expect(uid('n1', '/a.yaml')).not.toBe(uid('n2', '/a.yaml'));
    expect(uid('n1', '/a.yaml')).not.toBe(uid('n1', '/b.yaml'));
    const urlUid = decodeStaticPods(manifest, { nodeName: 'n1', source: 'http', url: '/a.yaml' })[0]?.metadata
      ?.uid;
    expect(urlUid).not.toBe(uid('n1', '/a.yaml'));
    const withUid = manifest.replace('name: web', 'name: web\n  uid: 1234-abcd');
    expect(
      decodeStaticPods(withUid, { nodeName: 'n1', source: 'file', file: '/a.yaml' })[0]?.metadata?.uid,
    ).toBe('1234-abcd');
  });

  it('hashes the pod first, independent of key order', () => {
    const a = { metadata: { name: 'a', labels: { x: '1', y: '2' } }, spec: { containers: [] } };
    const b = { spec: { containers: [] }, metadata: { labels: { y: '2', x: '1' }, name: 'a' } };
    const origin = { nodeName: 'n', kind: 'file', location: '/p' } as const;
    expect(staticPodUID(a, origin)).toBe(staticPodUID(b, origin));
    expect(staticPodUID({ ...a, metadata: { name: 'b' } }, origin)).not.toBe(staticPodUID(a, origin));
  });

  it('applies the API server defaults', () => {
    const [pod] = decodeStaticPods(manifest, { nodeName: 'n1', source: 'file', file: '/f' });
    const spec = pod?.spec;
    expect(spec?.restartPolicy).toBe('Always');
    expect(spec?.dnsPolicy).toBe('ClusterFirst');
    expect(spec?.terminationGracePeriodSeconds).toBe(30);
    expect(spec?.schedulerName).toBe('default-scheduler');
    expect(spec?.enableServiceLinks).toBe(true);
    const c = spec?.containers[0];
    expect(c?.imagePullPolicy).toBe('Always');
    expect(c?.terminationMessagePath).toBe('/dev/termination-log');
    expect(c?.terminationMessagePolicy).toBe('File');
    expect(c?.ports?.[0]?.protocol).toBe('TCP');
    expect(c?.livenessProbe).toMatchObject({
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
      httpGet: { path: '/', scheme: 'HTTP', port: 80 },
    });
    expect(spec?.volumes?.[0]?.hostPath?.type).toBe('');
    expect(spec?.volumes?.[1]?.emptyDir).toEqual({});
    expect(spec?.volumes?.[2]?.downwardAPI?.defaultMode).toBe(0o644);
    expect(spec?.volumes?.[2]?.downwardAPI?.items?.[0]?.fieldRef?.apiVersion).toBe('v1');
  });

  it('picks imagePullPolicy from the tag', () => {
    expect(defaultImagePullPolicy('nginx')).toBe('Always');
    expect(defaultImagePullPolicy('nginx:latest')).toBe('Always');
    expect(defaultImagePullPolicy('nginx:1.27')).toBe('IfNotPresent');
    expect(defaultImagePullPolicy('registry:5000/nginx')).toBe('Always');
    expect(defaultImagePullPolicy('registry:5000/nginx:1')).toBe('IfNotPresent');
    expect(defaultImagePullPolicy('nginx@sha256:abc')).toBe('IfNotPresent');
  });

  // SetDefaults_Container reads the tag through parsers.ParseImageName (docker reference
  // grammar): a digest does not hide a `latest` tag, and a reference that does not parse has no
  // tag at all, so it is IfNotPresent.
  it('reads the tag as the docker reference parser does (SetDefaults_Container)', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(defaultImagePullPolicy(`nginx:latest@${digest}`)).toBe('Always');
    expect(defaultImagePullPolicy(`nginx:1.27@${digest}`)).toBe('IfNotPresent');
    expect(defaultImagePullPolicy(`nginx@${digest}`)).toBe('IfNotPresent');
    expect(defaultImagePullPolicy('localhost:5000/team/app')).toBe('Always');
    expect(defaultImagePullPolicy('Registry.Example.com/app')).toBe('Always');
    // Not references: uppercase repository, a 64-hex identifier, an empty tag.
    expect(defaultImagePullPolicy('Nginx')).toBe('IfNotPresent');
    expect(defaultImagePullPolicy('team/MyApp')).toBe('IfNotPresent');
    expect(defaultImagePullPolicy('a'.repeat(64))).toBe('IfNotPresent');
    expect(defaultImagePullPolicy('nginx:')).toBe('IfNotPresent');
  });

  // The generated SetObjectDefaults_Pod gives a gRPC probe's service its declared default "".
  it('defaults a gRPC probe service to the empty string', () => {
    const pod = setPodDefaults({
      spec: {
        containers: [
          {
            name: 'c',
            image: 'i:1',
            livenessProbe: { grpc: { port: 9000 } },
            readinessProbe: { grpc: { port: 9000, service: 'ready' } },
          },
        ],
      },
    });
    expect(pod.spec?.containers[0]?.livenessProbe?.grpc).toEqual({ port: 9000, service: '' });
    expect(pod.spec?.containers[0]?.readinessProbe?.grpc).toEqual({ port: 9000, service: 'ready' });
  });

  it('keeps values the manifest sets and defaults requests from limits', () => {
    const pod = setPodDefaults({
      spec: {
        restartPolicy: 'Never',
        hostNetwork: true,
        containers: [
          {
            name: 'c',
            image: 'i:1',
            imagePullPolicy: 'Never',
            ports: [{ containerPort: 8080 }],
            resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m' } },
          },
        ],
      },
    });
    expect(pod.spec?.restartPolicy).toBe('Never');
    expect(pod.spec?.containers[0]?.imagePullPolicy).toBe('Never');
    expect(pod.spec?.containers[0]?.ports?.[0]?.hostPort).toBe(8080);
    expect(pod.spec?.containers[0]?.resources?.requests).toEqual({ cpu: '500m', memory: '1Gi' });
  });

  it('reads YAML with 1.1 rules: octal modes', () => {
    const m = `apiVersion: v1
kind: Pod
metadata: {name: cm}
spec:
  containers: [{name: c, image: i}]
  volumes:
  - name: v
    hostPath: {path: /x}
  - name: w
    downwardAPI: {defaultMode: 0400, items: [{path: a, fieldRef: {fieldPath: metadata.name}}]}
`;
    const [pod] = decodeStaticPods(m, { nodeName: 'n', source: 'file', file: '/f' });
    expect(pod?.spec?.volumes?.[1]?.downwardAPI?.defaultMode).toBe(0o400);
  });

  it('rejects static pods that reference API objects unless allowed', () => {
    const m = `apiVersion: v1
kind: Pod
metadata: {name: s}
spec:
  containers: [{name: c, image: i, envFrom: [{secretRef: {name: creds}}]}]
`;
    const opts = { nodeName: 'n', source: 'file', file: '/etc/m/s.yaml' };
    expect(() => decodeStaticPods(m, opts)).toThrow(/static pods may not reference secrets/);
    expect(decodeStaticPods(m, { ...opts, preventStaticPodAPIReferences: false })).toHaveLength(1);
    const cm = m
      .replace('envFrom: [{secretRef: {name: creds}}]', 'env: []')
      .replace('spec:\n', 'spec:\n  volumes: [{name: v, configMap: {name: x}}]\n');
    const err = (() => {
      try {
        decodeStaticPods(cm, opts);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(PodValidationError);
    expect((err as PodValidationError).message).toContain('configmaps');
    const decoded = decodeStaticPods(cm, { ...opts, preventStaticPodAPIReferences: false });
    expect(decoded[0]?.spec?.volumes?.[0]?.configMap?.defaultMode).toBe(0o644);
    const sa = m
      .replace('envFrom: [{secretRef: {name: creds}}]', 'env: []')
      .replace('spec:\n', 'spec:\n  serviceAccountName: robot\n');
    expect(() => decodeStaticPods(sa, opts)).toThrow(/serviceaccounts/);
    const pvc = m
      .replace('envFrom: [{secretRef: {name: creds}}]', 'env: []')
      .replace('spec:\n', 'spec:\n  volumes: [{name: v, persistentVolumeClaim: {claimName: x}}]\n');
    expect(() => decodeStaticPods(pvc, opts)).toThrow(/persistentvolumeclaims/);
  });

  // ValidatePodCreate (what the kubelet runs on a static pod) forbids ephemeral containers, and
  // scheduling gates together with the nodeName the static pod always gets.
  it('rejects what a pod may not have on create: ephemeral containers, scheduling gates', () => {
    const opts = { nodeName: 'n', source: 'file', file: '/m/c.yaml' };
    const reject = (spec: string) => {
      try {
        decodeStaticPods(`apiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec:\n${spec}`, opts);
        return undefined;
      } catch (e) {
        expect(e).toBeInstanceOf(PodValidationError);
        return (e as PodValidationError).errors.map((x) => [x.field, x.type]);
      }
    };
    const c = '  containers: [{name: c, image: i}]\n';
    expect(reject(`${c}  ephemeralContainers: [{name: debug, image: busybox}]\n`)).toEqual([
      ['spec.ephemeralContainers', 'Forbidden'],
    ]);
    expect(reject(`${c}  schedulingGates: [{name: example.com/gate}]\n`)).toEqual([
      ['spec.nodeName', 'Forbidden'],
    ]);
    expect(reject(c)).toBeUndefined();
  });

  it('names the referencing field, and keeps rejecting ClusterTrustBundles when allowed', () => {
    const opts = { nodeName: 'n', source: 'file', file: '/m/r.yaml' };
    const field = (spec: string, allow = false) => {
      const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: r}\nspec:\n${spec}`;
      try {
        decodeStaticPods(text, { ...opts, preventStaticPodAPIReferences: !allow });
        return undefined;
      } catch (e) {
        expect(e).toBeInstanceOf(PodValidationError);
        expect((e as PodValidationError).errors[0]?.type).toBe('Forbidden');
        return (e as PodValidationError).field;
      }
    };
    const c = '  containers: [{name: c, image: i}]\n';
    expect(field(`${c}  serviceAccountName: robot\n`)).toBe('spec.serviceAccountName');
    expect(
      field(
        '  containers: [{name: c, image: i, env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]\n',
      ),
    ).toBe('spec.containers[0].env[0].valueFrom.secretKeyRef');
    expect(field(`${c}  imagePullSecrets: [{name: reg}]\n`)).toBe('spec.imagePullSecrets[0]');
    expect(field(`${c}  volumes: [{name: v, configMap: {name: x}}]\n`)).toBe('spec.volumes[0].configMap');
    expect(
      field(`${c}  volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: t}}]}}]\n`),
    ).toBe('spec.volumes[0].projected.sources[0].serviceAccountToken');
    expect(
      field(
        `${c}  volumes: [{name: v, projected: {sources: [{downwardAPI: {items: [{path: a, fieldRef: {fieldPath: metadata.name}}]}}]}}]\n`,
      ),
    ).toBeUndefined();
    const bundle = `${c}  volumes: [{name: v, projected: {sources: [{clusterTrustBundle: {name: b, path: p}}]}}]\n`;
    expect(field(bundle, true)).toBe('spec.volumes[0].projected.sources[0].clusterTrustBundle');
    expect(field(`${c}  volumes: [{name: v, secret: {secretName: s}}]\n`, true)).toBeUndefined();
    // TestDecodeSinglePodRejectsClusterTrustBundleVolumes / ...RejectsResourceClaims: rejected
    // with the gate (default) and without it.
    expect(field(bundle)).toBe('spec.volumes[0].projected.sources[0].clusterTrustBundle');
    const claims =
      '  containers: [{name: c, image: i, resources: {claims: [{name: my-claim}]}}]\n' +
      '  resourceClaims: [{name: my-claim, resourceClaimName: some-external-claim}]\n';
    expect(field(claims)).toBe('spec.resourceClaims');
    expect(field(claims, true)).toBe('spec.resourceClaims');
    // VisitPodSecretNames skips empty names, and HasAPIObjectReference lets node-local volume
    // kinds through: a cephfs/rbd volume with an unnamed secretRef references nothing.
    expect(field(`${c}  volumes: [{name: v, cephfs: {monitors: [m], secretRef: {}}}]\n`)).toBeUndefined();
    expect(
      field(`${c}  volumes: [{name: v, rbd: {monitors: [m], image: i, secretRef: {name: ''}}}]\n`),
    ).toBeUndefined();
    expect(field(`${c}  volumes: [{name: v, cephfs: {monitors: [m], secretRef: {name: s}}}]\n`)).toBe(
      'spec.volumes[0].cephfs.secretRef',
    );
  });
});
