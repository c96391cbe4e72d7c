import fs from 'node:fs';
import path from 'node:path';
import type { RuntimeClass } from '@kubelet-kit/core';
import {
  type ContainerConfig,
  NamespaceMode,
  type PodSandboxConfig,
  SecurityProfile_ProfileType,
  SupplementalGroupsPolicy,
} from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getAppArmorProfile, isAppArmorRequired } from '../src/apparmor.js';
import { validateAppArmor } from '../src/index.js';
import { type Harness, harness, makePod } from './harness.js';

// Pod fields that ask for more isolation: each works as upstream or fails the pod, never weaker.

const classes: Record<string, RuntimeClass> = {
  plain: { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'plain' }, handler: 'runc' },
  sandboxed: {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: 'sandboxed' },
    handler: 'kata',
  },
};
const runtimeClassGetter = { getRuntimeClass: (name: string) => classes[name] };

let h: Harness;
beforeEach(async () => {
  h = await harness({ manager: { runtimeClassGetter } });
});
afterEach(async () => {
  await h.close();
});

const sandboxCalls = () =>
  h.server.calls<{ config: PodSandboxConfig; runtimeHandler: string }>('RunPodSandbox').map((c) => c.request);
const containerCalls = () =>
  h.server.calls<{ config: ContainerConfig }>('CreateContainer').map((c) => c.request.config);
const sandboxFailure = (r: Awaited<ReturnType<Harness['sync']>>) =>
  r.syncResults.find((x) => x.action === 'CreatePodSandbox');

describe('runtimeClassName', () => {
  it("runs the sandbox with the RuntimeClass's handler", async () => {
    const pod = makePod({ runtimeClassName: 'plain', containers: [{ name: 'a', image: 'busybox' }] });
    const result = await h.sync(pod);
    expect(sandboxFailure(result)?.error).toBeUndefined();
    expect(sandboxCalls().map((c) => c.runtimeHandler)).toEqual(['runc']);
    expect(containerCalls()).toHaveLength(1);
  });

  it('without a runtimeClassName the default handler ("") is used', async () => {
    await h.sync(makePod({ containers: [{ name: 'a', image: 'busybox' }] }));
    expect(sandboxCalls().map((c) => c.runtimeHandler)).toEqual(['']);
  });

  it("an unknown RuntimeClass fails the sandbox with upstream's error, and another pod still runs", async () => {
    const bad = makePod({ runtimeClassName: 'nope', containers: [{ name: 'a', image: 'busybox' }] });
    const good = makePod({ containers: [{ name: 'a', image: 'busybox' }] });
    const result = await h.sync(bad);
    expect(sandboxFailure(result)).toMatchObject({
      error: 'CreatePodSandboxError',
      message: `Failed to generate sandbox config for pod "${bad.metadata!.name}_default(${bad.metadata!.uid})": runtimeclass.node.k8s.io "nope" not found`,
    });
    expect(h.recorder.events.find((e) => e.reason === 'FailedCreatePodSandBox')!.message).toBe(
      'Failed to create pod sandbox: runtimeclass.node.k8s.io "nope" not found',
    );
    expect(sandboxCalls()).toHaveLength(0);
    expect(sandboxFailure(await h.sync(good))?.error).toBeUndefined();
    expect(sandboxCalls()).toHaveLength(1);
  });

  it('a manager without RuntimeClasses knows none: a named one fails rather than run under the default', async () => {
    const m = h.newManager({ runtimeClassGetter: undefined });
    expect(() =>
      m.generatePodSandboxConfig(makePod({ runtimeClassName: 'plain', containers: [] }), 0),
    ).toThrow('runtimeclass.node.k8s.io "plain" not found');
  });

  it("a handler the runtime lacks fails RunPodSandbox with the runtime's error", async () => {
    h.server.setRuntimeHandlers([{ name: '' }, { name: 'runc' }]);
    const pod = makePod({ runtimeClassName: 'sandboxed', containers: [{ name: 'a', image: 'busybox' }] });
    const result = await h.sync(pod);
    expect(sandboxFailure(result)).toMatchObject({ error: 'CreatePodSandboxError' });
    expect(sandboxFailure(result)!.message).toContain('no runtime for "kata" is configured');
  });
});

describe('hostUsers', () => {
  it('false on a runtime that reports no handlers (containerd 1.6) fails the sandbox', async () => {
    await h.manager.status();
    const pod = makePod({ hostUsers: false, containers: [{ name: 'a', image: 'busybox' }] });
    const result = await h.sync(pod);
    expect(sandboxFailure(result)).toMatchObject({
      error: 'CreatePodSandboxError',
      message: `Failed to generate sandbox config for pod "${pod.metadata!.name}_default(${pod.metadata!.uid})": RuntimeClass handler "" does not support user namespaces`,
    });
    expect(sandboxCalls()).toHaveLength(0);
  });

  it('false reads the runtime status first when none was read', async () => {
    h.server.setRuntimeHandlers([{ name: '', userNamespaces: true }]);
    const result = await h.sync(makePod({ hostUsers: false, containers: [{ name: 'a', image: 'busybox' }] }));
    expect(sandboxFailure(result)?.error).toBeUndefined();
    expect(sandboxCalls()[0]!.config.linux!.securityContext!.namespaceOptions!.usernsOptions!.mode).toBe(
      NamespaceMode.POD,
    );
  });

  it('false with a handler lacking support, or one the runtime does not list, fails', async () => {
    h.server.setRuntimeHandlers([
      { name: '', userNamespaces: true },
      { name: 'runc', userNamespaces: false },
    ]);
    await h.manager.status();
    const unsupported = await h.sync(
      makePod({ hostUsers: false, runtimeClassName: 'plain', containers: [{ name: 'a', image: 'busybox' }] }),
    );
    expect(sandboxFailure(unsupported)!.message).toContain(
      'RuntimeClass handler "runc" does not support user namespaces',
    );
    const unknown = await h.sync(
      makePod({
        hostUsers: false,
        runtimeClassName: 'sandboxed',
        containers: [{ name: 'a', image: 'busybox' }],
      }),
    );
    expect(sandboxFailure(unknown)!.message).toContain('the handler "kata" is not known');
    expect(sandboxCalls()).toHaveLength(0);
  });

  it('false with support maps each pod to its own 65536 IDs, for the sandbox and its containers, kept across restarts', async () => {
    h.server.setRuntimeHandlers([{ name: '', userNamespaces: true }]);
    await h.manager.status();
    const a = makePod({ hostUsers: false, containers: [{ name: 'a', image: 'busybox' }] });
    const b = makePod({ hostUsers: false, containers: [{ name: 'a', image: 'busybox' }] });
    await h.sync(a);
    await h.sync(b);
    const userns = sandboxCalls().map(
      (c) => c.config.linux!.securityContext!.namespaceOptions!.usernsOptions!,
    );
    const mapping = (hostId: number) => [{ containerId: 0, hostId, length: 65536 }];
    expect(userns).toEqual([
      { mode: NamespaceMode.POD, uids: mapping(65536), gids: mapping(65536) },
      { mode: NamespaceMode.POD, uids: mapping(131072), gids: mapping(131072) },
    ]);
    expect(containerCalls().map((c) => c.linux!.securityContext!.namespaceOptions!.usernsOptions)).toEqual(
      userns,
    );
    // A new manager (the agent restarted) gives the pod the range it had.
    const again = h.newManager();
    await again.status();
    expect(
      again.generatePodSandboxConfig(b, 1).linux!.securityContext!.namespaceOptions!.usernsOptions,
    ).toEqual(userns[1]);
    // A pod whose directory is gone frees its range.
    fs.rmSync(path.join(h.dir, 'root', 'pods', a.metadata!.uid!), { recursive: true });
    const c = makePod({ hostUsers: false, containers: [] });
    expect(
      again.generatePodSandboxConfig(c, 0).linux!.securityContext!.namespaceOptions!.usernsOptions,
    ).toEqual(userns[0]);
  });

  it('false beside a host namespace is refused, as upstream validation does', async () => {
    h.server.setRuntimeHandlers([{ name: '', userNamespaces: true }]);
    await h.manager.status();
    const result = await h.sync(
      makePod({ hostUsers: false, hostPID: true, containers: [{ name: 'a', image: 'busybox' }] }),
    );
    expect(sandboxFailure(result)!.message).toContain('spec.hostPID: Forbidden: when `hostUsers` is false');
    expect(sandboxCalls()).toHaveLength(0);
  });

  it('unset or true shares the node user namespace', async () => {
    for (const hostUsers of [undefined, true]) {
      const cfg = h.manager.generatePodSandboxConfig(
        makePod({ ...(hostUsers === undefined ? {} : { hostUsers }), containers: [] }),
        0,
      );
      expect(cfg.linux!.securityContext!.namespaceOptions!.usernsOptions).toEqual({
        mode: NamespaceMode.NODE,
        uids: [],
        gids: [],
      });
    }
  });
});

describe('AppArmor', () => {
  it("gives each container its profile: its own field, else the deprecated annotation, else the pod's", async () => {
    const pod = makePod(
      {
        securityContext: { appArmorProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'own',
            image: 'busybox',
            securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'k8s-own' } },
          },
          { name: 'annotated', image: 'busybox' },
          { name: 'inherits', image: 'busybox' },
          {
            name: 'unconfined',
            image: 'busybox',
            securityContext: { appArmorProfile: { type: 'Unconfined' } },
          },
        ],
      },
      {
        annotations: {
          'container.apparmor.security.beta.kubernetes.io/annotated': 'localhost/k8s-annotated',
        },
      },
    );
    await h.sync(pod);
    const byName = Object.fromEntries(
      containerCalls().map((c) => [
        c.metadata!.name,
        [c.linux!.securityContext!.apparmor, c.linux!.securityContext!.apparmorProfile],
      ]),
    );
    expect(byName).toEqual({
      own: [
        { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: 'k8s-own' },
        'localhost/k8s-own',
      ],
      annotated: [
        { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: 'k8s-annotated' },
        'localhost/k8s-annotated',
      ],
      inherits: [
        { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
        'runtime/default',
      ],
      unconfined: [{ profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '' }, 'unconfined'],
    });
  });

  it('without a profile the runtime decides (none is sent)', async () => {
    await h.sync(makePod({ containers: [{ name: 'a', image: 'busybox' }] }));
    expect(containerCalls()[0]!.linux!.securityContext!.apparmor).toBeUndefined();
  });

  it('validation: required unless all Unconfined; host error first; an empty Localhost name is invalid', () => {
    const unconfined = makePod({
      securityContext: { appArmorProfile: { type: 'Unconfined' } },
      containers: [{ name: 'a' }],
    });
    expect(isAppArmorRequired(unconfined)).toBe(false);
    expect(validateAppArmor(unconfined, 'AppArmor is not enabled on the host')).toBeUndefined();
    const annotated = makePod(
      { containers: [{ name: 'a' }] },
      {
        annotations: { 'container.apparmor.security.beta.kubernetes.io/a': 'runtime/default' },
      },
    );
    expect(isAppArmorRequired(annotated)).toBe(true);
    expect(validateAppArmor(annotated, 'AppArmor is not enabled on the host')).toBe(
      'AppArmor is not enabled on the host',
    );
    expect(getAppArmorProfile(annotated, { name: 'a' })).toEqual({ type: 'RuntimeDefault' });
    const empty = makePod({
      containers: [
        { name: 'a', securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: ' ' } } },
      ],
    });
    expect(validateAppArmor(empty, undefined)).toBe(
      'invalid empty AppArmor profile name: {"type":"Localhost","localhostProfile":" "}',
    );
    expect(validateAppArmor(annotated, undefined)).toBeUndefined();
  });
});

describe('supplementalGroupsPolicy', () => {
  it('goes to the sandbox and every container; unset sends none (Merge, the default)', async () => {
    const strict = makePod({
      securityContext: { supplementalGroups: [5000], supplementalGroupsPolicy: 'Strict' } as never,
      containers: [{ name: 'a', image: 'busybox' }],
    });
    await h.sync(strict);
    expect(sandboxCalls()[0]!.config.linux!.securityContext!.supplementalGroupsPolicy).toBe(
      SupplementalGroupsPolicy.Strict,
    );
    expect(containerCalls()[0]!.linux!.securityContext!.supplementalGroupsPolicy).toBe(
      SupplementalGroupsPolicy.Strict,
    );
    h.server.clearCalls();
    await h.sync(makePod({ containers: [{ name: 'a', image: 'busybox' }] }));
    expect(sandboxCalls()[0]!.config.linux!.securityContext!.supplementalGroupsPolicy).toBe(
      SupplementalGroupsPolicy.Merge,
    );
  });
});

describe('container user', () => {
  it('is read from a runtime that reports it (containerd 2 with SupplementalGroupsPolicy), absent otherwise', async () => {
    const spec = {
      securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [5000] },
      containers: [{ name: 'a', image: 'busybox' }],
    };
    const plain = makePod(spec);
    await h.sync(plain);
    expect((await h.status(plain)).containerStatuses[0]!.user).toBeUndefined();
    h.server.setRuntimeFeatures({ supplementalGroupsPolicy: true });
    const reported = makePod(spec);
    await h.sync(reported);
    expect((await h.status(reported)).containerStatuses[0]!.user).toEqual({
      linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 5000] },
    });
  });
});
