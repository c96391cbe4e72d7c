import type { Pod, Service, ServiceLister } from '@kubelet-kit/core';
import type { ContainerConfig } from '@kubelet-kit/cri';
import { afterEach, describe, expect, it } from 'vitest';
import { type EnvContext, fromServices, getServiceEnvVarMap, makeEnvironmentVariables } from '../src/env.js';
import { type Harness, harness, makePod } from './harness.js';

// Service link variables: upstream pkg/kubelet/envvars (TestFromServices) and kubelet_pods.go's
// getServiceEnvVarMap / makeEnvironmentVariables.

function svc(
  namespace: string,
  name: string,
  clusterIP: string,
  ports: NonNullable<Service['spec']>['ports'],
): Service {
  return { metadata: { namespace, name }, spec: { selector: { bar: 'baz' }, clusterIP, ports } };
}

function lister(services: Service[], synced = true): ServiceLister {
  return {
    list: (ns) => services.filter((s) => s.metadata?.namespace === ns),
    hasSynced: () => synced,
  };
}

describe('fromServices (upstream TestFromServices)', () => {
  it('gives upstream’s variables, skipping services without a cluster IP', () => {
    const sl = [
      svc('', 'foo-bar', '1.2.3.4', [{ port: 8080, protocol: 'TCP' }]),
      svc('', 'abc-123', '5.6.7.8', [
        { name: 'u-d-p', port: 8081, protocol: 'UDP' },
        { name: 't-c-p', port: 8081, protocol: 'TCP' },
      ]),
      svc('', 'q-u-u-x', '9.8.7.6', [
        { port: 8082, protocol: 'TCP' },
        { name: '8083', port: 8083, protocol: 'TCP' },
      ]),
      svc('', 'svrc-clusterip-none', 'None', [{ port: 8082, protocol: 'TCP' }]),
      svc('', 'svrc-clusterip-empty', '', [{ port: 8082, protocol: 'TCP' }]),
    ];
    expect(fromServices(sl).map(({ name, value }) => [name, value])).toEqual([
      ['FOO_BAR_SERVICE_HOST', '1.2.3.4'],
      ['FOO_BAR_SERVICE_PORT', '8080'],
      ['FOO_BAR_PORT', 'tcp://1.2.3.4:8080'],
      ['FOO_BAR_PORT_8080_TCP', 'tcp://1.2.3.4:8080'],
      ['FOO_BAR_PORT_8080_TCP_PROTO', 'tcp'],
      ['FOO_BAR_PORT_8080_TCP_PORT', '8080'],
      ['FOO_BAR_PORT_8080_TCP_ADDR', '1.2.3.4'],
      ['ABC_123_SERVICE_HOST', '5.6.7.8'],
      ['ABC_123_SERVICE_PORT', '8081'],
      ['ABC_123_SERVICE_PORT_U_D_P', '8081'],
      ['ABC_123_SERVICE_PORT_T_C_P', '8081'],
      ['ABC_123_PORT', 'udp://5.6.7.8:8081'],
      ['ABC_123_PORT_8081_UDP', 'udp://5.6.7.8:8081'],
      ['ABC_123_PORT_8081_UDP_PROTO', 'udp'],
      ['ABC_123_PORT_8081_UDP_PORT', '8081'],
      ['ABC_123_PORT_8081_UDP_ADDR', '5.6.7.8'],
      ['ABC_123_PORT_8081_TCP', 'tcp://5.6.7.8:8081'],
      ['ABC_123_PORT_8081_TCP_PROTO', 'tcp'],
      ['ABC_123_PORT_8081_TCP_PORT', '8081'],
      ['ABC_123_PORT_8081_TCP_ADDR', '5.6.7.8'],
      ['Q_U_U_X_SERVICE_HOST', '9.8.7.6'],
      ['Q_U_U_X_SERVICE_PORT', '8082'],
      ['Q_U_U_X_SERVICE_PORT_8083', '8083'],
      ['Q_U_U_X_PORT', 'tcp://9.8.7.6:8082'],
      ['Q_U_U_X_PORT_8082_TCP', 'tcp://9.8.7.6:8082'],
      ['Q_U_U_X_PORT_8082_TCP_PROTO', 'tcp'],
      ['Q_U_U_X_PORT_8082_TCP_PORT', '8082'],
      ['Q_U_U_X_PORT_8082_TCP_ADDR', '9.8.7.6'],
      ['Q_U_U_X_PORT_8083_TCP', 'tcp://9.8.7.6:8083'],
      ['Q_U_U_X_PORT_8083_TCP_PROTO', 'tcp'],
      ['Q_U_U_X_PORT_8083_TCP_PORT', '8083'],
      ['Q_U_U_X_PORT_8083_TCP_ADDR', '9.8.7.6'],
    ]);
  });

  it('brackets an IPv6 cluster IP in URLs, defaults the protocol to TCP and skips a service without ports', () => {
    const vars = fromServices([
      svc('', 'v6', 'fd00::1', [{ port: 443 }]),
      { metadata: { name: 'noports' }, spec: { clusterIP: '10.0.0.9' } },
    ]);
    expect(Object.fromEntries(vars.map((v) => [v.name, v.value]))).toEqual({
      V6_SERVICE_HOST: 'fd00::1',
      V6_SERVICE_PORT: '443',
      V6_PORT: 'tcp://[fd00::1]:443',
      V6_PORT_443_TCP: 'tcp://[fd00::1]:443',
      V6_PORT_443_TCP_PROTO: 'tcp',
      V6_PORT_443_TCP_PORT: '443',
      V6_PORT_443_TCP_ADDR: 'fd00::1',
    });
  });
});

const kubernetes = svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]);
const names = (m: Map<string, string>) => [...m.keys()].filter((k) => k.endsWith('_SERVICE_HOST')).sort();

describe('getServiceEnvVarMap', () => {
  const services = [
    kubernetes,
    svc('default', 'other', '10.96.0.2', [{ port: 80 }]),
    svc('ns', 'web', '10.96.0.3', [{ port: 80 }]),
    svc('ns', 'headless', 'None', [{ port: 80 }]),
    svc('elsewhere', 'far', '10.96.0.4', [{ port: 80 }]),
  ];

  it('gives the pod’s namespace’s services and default/kubernetes with service links', () => {
    expect(names(getServiceEnvVarMap(lister(services), 'ns', true))).toEqual([
      'KUBERNETES_SERVICE_HOST',
      'WEB_SERVICE_HOST',
    ]);
  });

  it('gives only default/kubernetes without service links', () => {
    const m = getServiceEnvVarMap(lister(services), 'ns', false);
    expect(Object.fromEntries(m)).toEqual({
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBERNETES_SERVICE_PORT_HTTPS: '443',
      KUBERNETES_PORT: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_443_TCP_PORT: '443',
      KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
    });
    // In the default namespace, without links, the other default services stay out.
    expect(names(getServiceEnvVarMap(lister(services), 'default', false))).toEqual([
      'KUBERNETES_SERVICE_HOST',
    ]);
    expect(names(getServiceEnvVarMap(lister(services), 'default', true))).toEqual([
      'KUBERNETES_SERVICE_HOST',
      'OTHER_SERVICE_HOST',
    ]);
  });

  it('lets a kubernetes Service of the pod’s namespace win over the master one, with links', () => {
    const own = svc('ns', 'kubernetes', '10.96.9.9', [{ port: 8443 }]);
    expect(getServiceEnvVarMap(lister([kubernetes, own]), 'ns', true).get('KUBERNETES_SERVICE_HOST')).toBe(
      '10.96.9.9',
    );
    expect(getServiceEnvVarMap(lister([kubernetes, own]), 'ns', false).get('KUBERNETES_SERVICE_HOST')).toBe(
      '10.96.0.1',
    );
  });

  it('gives nothing without a lister', () => {
    expect(getServiceEnvVarMap(undefined, 'ns', true).size).toBe(0);
  });
});

describe('makeEnvironmentVariables with services', () => {
  const ctx = (serviceLister?: ServiceLister): EnvContext => ({
    nodeName: 'node-a',
    podIP: '10.1.0.5',
    podIPs: ['10.1.0.5'],
    hostIPs: ['192.168.1.2'],
    ...(serviceLister ? { serviceLister } : {}),
  });
  const apiPod = (
    spec: Partial<NonNullable<Pod['spec']>> = {},
    annotations?: Record<string, string>,
  ): Pod => ({
    metadata: {
      name: 'p',
      namespace: 'ns',
      uid: 'u1',
      annotations: annotations ?? { 'kubernetes.io/config.source': 'api' },
    },
    spec: { containers: [], ...spec },
  });
  const web = svc('ns', 'web', '10.96.0.3', [{ port: 80 }]);

  it('puts the container’s own variables first, then the service ones it does not override', async () => {
    const env = await makeEnvironmentVariables(
      apiPod(),
      {
        name: 'c',
        env: [
          { name: 'WEB_SERVICE_PORT', value: '9999' },
          { name: 'URL', value: 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/$(KUBERNETES_SERVICE_PORT)' },
        ],
      },
      ctx(lister([kubernetes, web])),
    );
    expect([...env.keys()].slice(0, 2)).toEqual(['WEB_SERVICE_PORT', 'URL']);
    // $(VAR) sees the container's variables first, then the services'.
    expect(env.get('URL')).toBe('http://10.96.0.3:9999/443');
    expect(env.get('WEB_SERVICE_PORT')).toBe('9999');
    expect(env.get('WEB_SERVICE_HOST')).toBe('10.96.0.3');
    expect(env.get('KUBERNETES_SERVICE_HOST')).toBe('10.96.0.1');
  });

  it('honours enableServiceLinks: false, keeping KUBERNETES_SERVICE_*', async () => {
    const env = await makeEnvironmentVariables(
      apiPod({ enableServiceLinks: false }),
      { name: 'c' },
      ctx(lister([kubernetes, web])),
    );
    expect(env.has('WEB_SERVICE_HOST')).toBe(false);
    expect(env.get('KUBERNETES_SERVICE_HOST')).toBe('10.96.0.1');
  });

  it('fails an API pod’s container until the services have been listed; a static pod does not wait', async () => {
    const unsynced = lister([kubernetes], false);
    await expect(makeEnvironmentVariables(apiPod(), { name: 'c' }, ctx(unsynced))).rejects.toThrow(
      'services have not yet been read at least once, cannot construct envvars',
    );
    const staticPod = apiPod({}, { 'kubernetes.io/config.source': 'file' });
    const env = await makeEnvironmentVariables(staticPod, { name: 'c' }, ctx(unsynced));
    expect(env.get('KUBERNETES_SERVICE_HOST')).toBe('10.96.0.1');
  });

  it('gives no service variables and no error without a lister (no API server)', async () => {
    const env = await makeEnvironmentVariables(
      apiPod(),
      { name: 'c', env: [{ name: 'A', value: '$(B)' }] },
      ctx(),
    );
    expect([...env]).toEqual([['A', '$(B)']]);
  });
});

describe('the runtime manager with a service lister', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('starts containers with the service variables, and not before the lister has synced', async () => {
    let synced = false;
    const serviceLister: ServiceLister = {
      list: (ns) =>
        [kubernetes, svc('default', 'web', '10.96.0.3', [{ port: 80 }])].filter(
          (s) => s.metadata?.namespace === ns,
        ),
      hasSynced: () => synced,
    };
    h = await harness({ manager: { serviceLister } });
    const pod = makePod({
      containers: [{ name: 'c', image: 'busybox:v2', env: [{ name: 'X', value: '1' }] }],
    });
    const early = await h.sync(pod);
    const start = early.syncResults.find((r) => r.action === 'StartContainer');
    expect(start?.error).toBe('CreateContainerConfigError');
    expect(start?.message).toBe('services have not yet been read at least once, cannot construct envvars');
    expect(h.server.calls('CreateContainer')).toHaveLength(0);

    synced = true;
    await h.sync(pod);
    const [created] = h.server.calls<{ config: ContainerConfig }>('CreateContainer');
    const envs = Object.fromEntries((created?.request.config.envs ?? []).map((e) => [e.key, e.value]));
    expect(envs).toMatchObject({ X: '1', KUBERNETES_SERVICE_HOST: '10.96.0.1', WEB_SERVICE_PORT: '80' });
    expect(created?.request.config.envs?.[0]?.key).toBe('X');
  });
});
