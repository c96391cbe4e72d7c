import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod, PodStatus, PodStatusCache, Runtime } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import type { UpdatePodOptions } from '@kubelet-kit/pod-workers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PlegView, PodConfigView, ProbeManagerView, StatusManagerView } from '../src/deps.js';
import { Kubelet } from '../src/kubelet.js';
import { admitPodFeatures, appArmorHostError, type PodFeatureSupport } from '../src/pod-feature-admission.js';
import { loadRuntimeClasses } from '../src/runtime-classes.js';
import { emptyStatus } from './kubelet-harness.js';

// RuntimeClasses from files, and the admission of AppArmor and supplementalGroupsPolicy.

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-pod-fields-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const write = (name: string, text: string) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
};

describe('loadRuntimeClasses', () => {
  it('reads YAML (several documents) and JSON files of a directory, and a single file', () => {
    write(
      'a.yaml',
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: fast}\nhandler: runc\noverhead: {podFixed: {cpu: 10m}}\n---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n',
    );
    write(
      'b.json',
      JSON.stringify({
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        metadata: { name: 'kata' },
        handler: 'kata',
      }),
    );
    write('notes.txt', 'ignored');
    const list = loadRuntimeClasses(dir);
    expect(list.names).toEqual(['fast', 'gvisor', 'kata']);
    expect(list.getRuntimeClass('fast')).toMatchObject({
      handler: 'runc',
      overhead: { podFixed: { cpu: '10m' } },
    });
    expect(list.getRuntimeClass('other')).toBeUndefined();
    expect(loadRuntimeClasses(path.join(dir, 'b.json')).names).toEqual(['kata']);
  });

  it.each([
    [
      'apiVersion: node.k8s.io/v1beta1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: runc\n',
      'document 1: apiVersion: Unsupported value: "node.k8s.io/v1beta1"',
    ],
    [
      'apiVersion: node.k8s.io/v1\nkind: Pod\nmetadata: {name: x}\nhandler: runc\n',
      'document 1: kind: Unsupported value: "Pod"',
    ],
    [
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nhandler: runc\n',
      'document 1: metadata.name: Required value',
    ],
    [
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: x}\n',
      'document 1: handler: Required value',
    ],
    [
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: Run_C\n',
      'document 1: handler: Invalid value: "Run_C"',
    ],
    [
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: [\n',
      'document 1: cannot parse',
    ],
  ])('refuses a bad file, naming it and the field: %#', (text, detail) => {
    const file = write('bad.yaml', text);
    expect(() => loadRuntimeClasses(dir)).toThrow(`RuntimeClass file ${file}: ${detail}`);
  });

  it('refuses one name given twice', () => {
    const rc = 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: runc\n';
    const a = write('a.yaml', rc);
    const b = write('b.yaml', rc);
    expect(() => loadRuntimeClasses(dir)).toThrow(
      `RuntimeClass file ${b}: metadata.name: Duplicate value: "x" (also in ${a})`,
    );
  });
});

describe('appArmorHostError', () => {
  it('is enabled only with the securityfs entry and the module parameter Y', () => {
    const securityfs = path.join(dir, 'apparmor');
    const enabled = path.join(dir, 'enabled');
    expect(appArmorHostError({ securityfs, enabled })).toBe('AppArmor is not enabled on the host');
    fs.mkdirSync(securityfs);
    fs.writeFileSync(enabled, 'N\n');
    expect(appArmorHostError({ securityfs, enabled })).toBe('AppArmor is not enabled on the host');
    fs.writeFileSync(enabled, 'Y\n');
    expect(appArmorHostError({ securityfs, enabled })).toBeUndefined();
  });
});

const noSupport: PodFeatureSupport = {
  appArmorHostError: 'AppArmor is not enabled on the host',
  supplementalGroupsPolicy: () => false,
};
const fullSupport: PodFeatureSupport = { appArmorHostError: undefined, supplementalGroupsPolicy: () => true };

function pod(
  spec: Partial<NonNullable<Pod['spec']>> = {},
  annotations: Record<string, string> = {},
  status?: PodStatus,
): Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid: `uid-${Math.random()}`, annotations },
    spec: { containers: [{ name: 'main', image: 'busybox' }], ...spec },
    ...(status ? { status } : {}),
  };
}

describe('admitPodFeatures', () => {
  it('refuses Strict supplemental groups unless the runtime reports the feature; Merge always runs', () => {
    const strict = pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } as never });
    expect(admitPodFeatures(strict, noSupport)).toEqual({
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    });
    expect(admitPodFeatures(strict, fullSupport)).toBeUndefined();
    expect(
      admitPodFeatures(pod({ securityContext: { supplementalGroupsPolicy: 'Merge' } as never }), noSupport),
    ).toBeUndefined();
  });

  it('refuses an AppArmor profile the host cannot enforce, from a field or the deprecated annotation', () => {
    const refused = {
      admit: false,
      reason: 'AppArmor',
      message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
    };
    const localhost = pod({
      containers: [
        {
          name: 'main',
          securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'k8s-x' } },
        },
      ],
    });
    expect(admitPodFeatures(localhost, noSupport)).toEqual(refused);
    expect(
      admitPodFeatures(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), noSupport),
    ).toEqual(refused);
    expect(
      admitPodFeatures(
        pod({}, { 'container.apparmor.security.beta.kubernetes.io/main': 'localhost/k8s-x' }),
        noSupport,
      ),
    ).toEqual(refused);
    expect(admitPodFeatures(localhost, fullSupport)).toBeUndefined();
    // Unconfined asks for nothing the host lacks.
    expect(
      admitPodFeatures(pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }), noSupport),
    ).toBeUndefined();
    // A running pod (an agent restart) is not checked again, as upstream.
    expect(
      admitPodFeatures(
        pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }, {}, { phase: 'Running' }),
        noSupport,
      ),
    ).toBeUndefined();
  });

  it('with AppArmor, an empty Localhost profile name is refused', () => {
    const empty = pod({
      containers: [
        { name: 'main', securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: '' } } },
      ],
    });
    expect(admitPodFeatures(empty, fullSupport)).toMatchObject({
      reason: 'AppArmor',
      message:
        'Cannot enforce AppArmor: invalid empty AppArmor profile name: {"type":"Localhost","localhostProfile":""}',
    });
  });
});

describe('Kubelet admission', () => {
  const podCache: PodStatusCache = { get: () => emptyStatus, getNewerThan: async () => emptyStatus };

  function kubelet(podFeatures?: PodFeatureSupport) {
    const written: Array<{ uid: string; status: PodStatus }> = [];
    const statusManager = {
      start() {},
      stop() {},
      getPodStatus: () => undefined,
      getPodPhase: () => undefined,
      setPodStatus(p: Pod, status: PodStatus) {
        written.push({ uid: p.metadata?.uid ?? '', status });
      },
      setContainerReadiness() {},
      setContainerStartup() {},
      terminatePod() {},
      removeOrphanedStatuses() {},
    } as StatusManagerView;
    const k = new Kubelet({
      nodeName: 'node-a',
      rootDirectory: '/nonexistent/kubelet-kit-pod-fields-test',
      nodeIPs: ['192.0.2.10'],
      allocatable: { cpu: 4, memory: 8 * 2 ** 30, pods: 110 },
      runtime: {
        getPods: async () => [],
        garbageCollect: async () => {},
        syncPod: async () => ({ syncResults: [] }),
      } as unknown as Runtime,
      podConfig: {
        async *updates() {},
        seenAllSources: () => true,
        start() {},
        async stop() {},
      } as PodConfigView,
      podManager: new BasicPodManager(),
      statusManager,
      pleg: { start() {}, stop() {}, watch: () => () => {}, healthy: () => ({ healthy: true }) } as PlegView,
      probeManager: {
        start() {},
        async stop() {},
        addPod() {},
        removePod() {},
        cleanupPods() {},
        stopLivenessAndStartup() {},
        updatePodStatus() {},
        onResult: () => () => {},
      } as ProbeManagerView,
      podCache,
      clock: new FakeClock(Date.UTC(2026, 5, 1)),
      ...(podFeatures ? { podFeatures } : {}),
    });
    const updates: UpdatePodOptions[] = [];
    k.podWorkers.updatePod = (options: UpdatePodOptions) => {
      updates.push(options);
    };
    return { k, written, updates };
  }

  it('rejects the pods the node cannot run as asked and starts the others', () => {
    const { k, written, updates } = kubelet(noSupport);
    const strict = pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } as never });
    const armored = pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } });
    const plain = pod();
    k.handlePodAdditions([strict, armored, plain]);
    expect(written.map((w) => [w.uid, w.status.phase, w.status.reason])).toEqual([
      [strict.metadata!.uid, 'Failed', 'SupplementalGroupsPolicyNotSupported'],
      [armored.metadata!.uid, 'Failed', 'AppArmor'],
    ]);
    expect(updates.map((u) => u.pod?.metadata?.uid)).toEqual([plain.metadata!.uid]);
  });

  it('without podFeatures the node claims neither: such pods are refused, never run weaker', () => {
    const { k, written } = kubelet();
    k.handlePodAdditions([pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } })]);
    expect(written.map((w) => w.status.reason)).toEqual(['AppArmor']);
  });
});
