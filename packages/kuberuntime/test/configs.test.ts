import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ConfigMap, ObjectGetter, Pod, Secret } from '@kubelet-kit/core';
import { NamespaceMode } from '@kubelet-kit/cri';
import { describe, expect, it } from 'vitest';
import { verifyRunAsNonRoot } from '../src/container-config.js';
import { type EnvContext, makeEnvironmentVariables } from '../src/env.js';
import { generateContainerConfig, generatePodSandboxConfig } from '../src/index.js';
import { RecordingSubpather } from './fake-subpather.js';

const getter = (cms: ConfigMap[], secrets: Secret[]): ObjectGetter => ({
  getConfigMap: async (ns, name) =>
    cms.find((c) => c.metadata?.namespace === ns && c.metadata?.name === name),
  getSecret: async (ns, name) =>
    secrets.find((c) => c.metadata?.namespace === ns && c.metadata?.name === name),
});

const ctx = (objectGetter?: ObjectGetter): EnvContext => ({
  nodeName: 'node-a',
  podIP: '10.1.0.5',
  podIPs: ['10.1.0.5', 'fd00::5'],
  hostIPs: ['192.168.1.2'],
  ...(objectGetter ? { objectGetter } : {}),
  nodeAllocatable: { cpu: '4', memory: '8Gi' },
});

const pod: Pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1', labels: { b: '2', a: '1' }, annotations: { note: 'n' } },
  spec: { serviceAccountName: 'sa', containers: [] },
};

describe('makeEnvironmentVariables', () => {
  const objects = getter(
    [{ metadata: { name: 'cm', namespace: 'ns' }, data: { A: 'from-cm', B: 'b' } }],
    [
      {
        metadata: { name: 'sec', namespace: 'ns' },
        data: { TOKEN: Buffer.from('t0k3n').toString('base64') },
      },
    ],
  );

  it('resolves envFrom, literals with expansion, downward API, resource fields, ConfigMap and Secret keys', async () => {
    const env = await makeEnvironmentVariables(
      pod,
      {
        name: 'c',
        resources: { requests: { cpu: '250m' }, limits: { memory: '128Mi' } },
        envFrom: [{ configMapRef: { name: 'cm' }, prefix: 'CM_' }, { secretRef: { name: 'sec' } }],
        env: [
          { name: 'X', value: '$(CM_A)-$(TOKEN)-$$(X)' },
          { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
          { name: 'LABEL_A', valueFrom: { fieldRef: { fieldPath: "metadata.labels['a']" } } },
          { name: 'LABELS', valueFrom: { fieldRef: { fieldPath: 'metadata.labels' } } },
          { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
          { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
          { name: 'POD_IPS', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } },
          { name: 'CPU_REQ_M', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
          { name: 'CPU_LIM', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
          {
            name: 'MEM_LIM_MI',
            valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } },
          },
          { name: 'B_KEY', valueFrom: { configMapKeyRef: { name: 'cm', key: 'B' } } },
          { name: 'SECRET', valueFrom: { secretKeyRef: { name: 'sec', key: 'TOKEN' } } },
          { name: 'OPT', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k', optional: true } } },
        ],
      },
      ctx(objects),
    );
    expect(Object.fromEntries(env)).toEqual({
      CM_A: 'from-cm',
      CM_B: 'b',
      TOKEN: 't0k3n',
      X: 'from-cm-t0k3n-$(X)',
      NS: 'ns',
      UID: 'u1',
      LABEL_A: '1',
      LABELS: 'a="1"\nb="2"',
      SA: 'sa',
      HOST_IP: '192.168.1.2',
      POD_IPS: '10.1.0.5,fd00::5',
      CPU_REQ_M: '250',
      CPU_LIM: '4',
      MEM_LIM_MI: '128',
      B_KEY: 'b',
      SECRET: 't0k3n',
    });
  });

  it('fails on a missing key or object unless optional', async () => {
    await expect(
      makeEnvironmentVariables(
        pod,
        { name: 'c', env: [{ name: 'K', valueFrom: { configMapKeyRef: { name: 'cm', key: 'nope' } } }] },
        ctx(objects),
      ),
    ).rejects.toThrow("couldn't find key nope in ConfigMap ns/cm");
    await expect(
      makeEnvironmentVariables(pod, { name: 'c', envFrom: [{ secretRef: { name: 'gone' } }] }, ctx(objects)),
    ).rejects.toThrow('secret "gone" not found');
  });
});

describe('sandbox config', () => {
  it('uses host namespaces and no hostname for host-network pods', () => {
    const p: Pod = {
      ...pod,
      spec: {
        hostNetwork: true,
        hostPID: true,
        hostIPC: true,
        containers: [{ name: 'c', securityContext: { privileged: true } }],
      },
    };
    const cfg = generatePodSandboxConfig(p, 2, {
      podLogsRootDirectory: '/logs',
      cgroupParent: '/kubepods/pod-u1',
      resolvConf: '',
    });
    expect(cfg.hostname).toBeUndefined();
    expect(cfg.metadata).toEqual({ name: 'p', namespace: 'ns', uid: 'u1', attempt: 2 });
    expect(cfg.logDirectory).toBe('/logs/ns_p_u1');
    expect(cfg.linux?.cgroupParent).toBe('/kubepods/pod-u1');
    expect(cfg.linux?.securityContext?.privileged).toBe(true);
    expect(cfg.linux?.securityContext?.namespaceOptions).toMatchObject({
      network: NamespaceMode.NODE,
      pid: NamespaceMode.NODE,
      ipc: NamespaceMode.NODE,
    });
  });

  it('sets sysctls, pod namespaces and the hostname for other pods', () => {
    const p: Pod = {
      ...pod,
      spec: {
        hostname: 'web-0',
        shareProcessNamespace: true,
        securityContext: { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] },
        containers: [],
      },
    };
    const cfg = generatePodSandboxConfig(p, 0, {
      podLogsRootDirectory: '/logs',
      cgroupParent: '',
      resolvConf: '',
    });
    expect(cfg.hostname).toBe('web-0');
    expect(cfg.linux?.sysctls).toEqual({ 'net.core.somaxconn': '1024' });
    expect(cfg.linux?.securityContext?.namespaceOptions).toMatchObject({
      network: NamespaceMode.POD,
      pid: NamespaceMode.POD,
      ipc: NamespaceMode.POD,
    });
  });
});

describe('container config', () => {
  it('refuses runAsNonRoot with a root user, accepts a non-root one', () => {
    const c = { name: 'c' };
    expect(() => verifyRunAsNonRoot(pod, c, { runAsNonRoot: true, runAsUser: 0 }, { username: '' })).toThrow(
      "container's runAsUser breaks non-root policy",
    );
    expect(() => verifyRunAsNonRoot(pod, c, { runAsNonRoot: true }, { uid: 0, username: '' })).toThrow(
      'image will run as root',
    );
    expect(() => verifyRunAsNonRoot(pod, c, { runAsNonRoot: true }, { username: 'app' })).toThrow(
      'non-numeric user',
    );
    expect(() =>
      verifyRunAsNonRoot(pod, c, { runAsNonRoot: true }, { uid: 1000, username: '' }),
    ).not.toThrow();
    expect(() =>
      verifyRunAsNonRoot(pod, c, { runAsNonRoot: true, runAsUser: 1000 }, { uid: 0, username: '' }),
    ).not.toThrow();
  });

  it('mounts volumes with subPath and read-only, and rejects unknown volumes', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-cc-'));
    const base = {
      containerType: 'container' as const,
      restartCount: 2,
      imageRef: 'sha256:abc',
      imageUser: { username: '' },
      env: ctx(),
      volumes: new Map([['data', { hostPath: dir, readOnly: false }]]),
      podDir: path.join(dir, 'pod'),
      podLogsRootDirectory: path.join(dir, 'logs'),
      memoryCapacity: 2 ** 30,
      subpather: new RecordingSubpather(),
    };
    const { config, terminationMessageFile } = await generateContainerConfig(
      pod,
      {
        name: 'c',
        image: 'busybox',
        volumeMounts: [{ name: 'data', mountPath: '/data', subPath: 'x/y', readOnly: true }],
        tty: true,
      },
      base,
    );
    expect(config.mounts?.[0]).toMatchObject({
      containerPath: '/data',
      hostPath: path.join(dir, 'pod', 'volume-subpaths', 'data', 'c', '0'),
      readonly: true,
    });
    expect(config.logPath).toBe('c/2.log');
    expect(config.metadata).toEqual({ name: 'c', attempt: 2 });
    expect(config.tty).toBe(true);
    // Without runAsUser the image's user is passed on; with it, runAsUser wins.
    expect(config.linux?.securityContext).toMatchObject({ runAsUsername: '' });
    const withUid = await generateContainerConfig(
      pod,
      { name: 'c' },
      { ...base, imageUser: { uid: 1234, username: '' } },
    );
    expect(withUid.config.linux?.securityContext?.runAsUser).toEqual({ value: 1234 });
    const own = await generateContainerConfig(
      pod,
      { name: 'c', securityContext: { runAsUser: 5 } },
      { ...base, imageUser: { uid: 1234, username: '' } },
    );
    expect(own.config.linux?.securityContext?.runAsUser).toEqual({ value: 5 });
    expect(fs.statSync(terminationMessageFile!).mode & 0o777).toBe(0o666);
    expect(fs.existsSync(path.join(dir, 'logs', 'ns_p_u1', 'c'))).toBe(true);
    await expect(
      generateContainerConfig(pod, { name: 'c', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }, base),
    ).rejects.toThrow('cannot find volume "nope" to mount into container "c"');
    await expect(
      generateContainerConfig(
        pod,
        { name: 'c', volumeMounts: [{ name: 'data', mountPath: '/x', subPath: '../etc' }] },
        base,
      ),
    ).rejects.toThrow("unable to provision SubPath `../etc`: must not contain '..'");
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('/etc/hosts', () => {
  it('writes upstream’s managed hosts file and mounts it, unless the container mounts its own', async () => {
    const { managedHostsFileContent } = await import('../src/etc-hosts.js');
    expect(
      managedHostsFileContent(
        ['10.1.0.5'],
        'web-0',
        'svc1.ns.svc.cluster.local',
        [{ ip: '1.2.3.4', hostnames: ['a', 'b'] }],
        false,
      ),
    ).toBe(
      '# Kubernetes-managed hosts file.\n' +
        '127.0.0.1\tlocalhost\n' +
        '::1\tlocalhost ip6-localhost ip6-loopback\n' +
        'fe00::0\tip6-localnet\n' +
        'fe00::0\tip6-mcastprefix\n' +
        'fe00::1\tip6-allnodes\n' +
        'fe00::2\tip6-allrouters\n' +
        '10.1.0.5\tweb-0.svc1.ns.svc.cluster.local\tweb-0\n' +
        '\n# Entries added by HostAliases.\n' +
        '1.2.3.4\ta\tb\n',
    );
    expect(managedHostsFileContent([], 'h', '', undefined, true, '127.0.0.1 node\n')).toBe(
      '# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n',
    );

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-hosts-'));
    const base = {
      containerType: 'container' as const,
      restartCount: 0,
      imageRef: 'sha256:abc',
      imageUser: { username: '' },
      env: ctx(),
      volumes: new Map([['h', { hostPath: '/host/hosts', readOnly: true }]]),
      podDir: path.join(dir, 'pod'),
      podLogsRootDirectory: path.join(dir, 'logs'),
      memoryCapacity: 2 ** 30,
      etcHosts: { podDir: path.join(dir, 'pod') },
    };
    const { config } = await generateContainerConfig(pod, { name: 'c' }, base);
    const hosts = config.mounts?.find((m) => m.containerPath === '/etc/hosts');
    expect(hosts?.hostPath).toBe(path.join(dir, 'pod', 'etc-hosts'));
    expect(fs.readFileSync(hosts!.hostPath!, 'utf8')).toContain(
      'fe00::2\tip6-allrouters\n10.1.0.5\tp\nfd00::5\tp\n',
    );
    const own = await generateContainerConfig(
      pod,
      { name: 'c', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] },
      base,
    );
    expect(own.config.mounts?.filter((m) => m.containerPath === '/etc/hosts').map((m) => m.hostPath)).toEqual(
      ['/host/hosts'],
    );
    // No pod IP yet: no managed file.
    const noIP = await generateContainerConfig(
      pod,
      { name: 'c' },
      { ...base, env: { ...ctx(), podIPs: [], podIP: '' } },
    );
    expect(noIP.config.mounts?.some((m) => m.containerPath === '/etc/hosts')).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
