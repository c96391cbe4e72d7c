import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { ContainerState, PodSandboxState } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ContainerGCOptions, containerGC } from '../src/gc.js';
import { podUIDLabel } from '../src/index.js';

// containerGC against a recording fake of the CRI calls it makes (upstream kuberuntime_gc.go and
// the TestContainerGC / TestSandboxGC tables of kuberuntime_gc_test.go).

interface FakeContainer {
  id: string;
  uid: string;
  name: string;
  createdAt: number; // ms
  state: ContainerState;
  sandbox?: string;
}
interface FakeSandbox {
  id: string;
  uid: string;
  createdAt: number; // ms
  state: PodSandboxState;
}

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-gc-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function fake(containers: FakeContainer[], sandboxes: FakeSandbox[] = [], stopFails = new Set<string>()) {
  const calls: string[] = [];
  let cs = [...containers];
  let ss = [...sandboxes];
  const rs: ContainerGCOptions['runtimeService'] = {
    listContainers: (async () => ({
      containers: cs.map((c) => ({
        id: c.id,
        podSandboxId: c.sandbox ?? '',
        state: c.state,
        createdAt: c.createdAt * 1e6,
        labels: { [podUIDLabel]: c.uid, 'io.kubernetes.container.name': c.name },
        annotations: {},
        metadata: { name: c.name, attempt: 0 },
      })),
    })) as unknown as ContainerGCOptions['runtimeService']['listContainers'],
    listPodSandbox: (async () => ({
      items: ss.map((s) => ({
        id: s.id,
        state: s.state,
        createdAt: s.createdAt * 1e6,
        metadata: { uid: s.uid, name: 'p', namespace: 'ns', attempt: 0 },
        labels: { [podUIDLabel]: s.uid },
        annotations: {},
      })),
    })) as unknown as ContainerGCOptions['runtimeService']['listPodSandbox'],
    stopPodSandbox: (async (req: { podSandboxId: string }) => {
      calls.push(`stopPodSandbox ${req.podSandboxId}`);
      if (stopFails.has(req.podSandboxId)) throw new Error('stop failed');
      return {};
    }) as unknown as ContainerGCOptions['runtimeService']['stopPodSandbox'],
    removePodSandbox: (async (req: { podSandboxId: string }) => {
      calls.push(`removePodSandbox ${req.podSandboxId}`);
      ss = ss.filter((s) => s.id !== req.podSandboxId);
      return {};
    }) as unknown as ContainerGCOptions['runtimeService']['removePodSandbox'],
  };
  return {
    calls,
    rs,
    remaining: () => cs.map((c) => c.id),
    sandboxes: () => ss.map((s) => s.id),
    removeContainer: async (id: string) => {
      calls.push(`removeContainer ${id}`);
      cs = cs.filter((c) => c.id !== id);
    },
  };
}

const clock = new FakeClock();
const hour = 3_600_000;

function options(f: ReturnType<typeof fake>, extra: Partial<ContainerGCOptions> = {}): ContainerGCOptions {
  return {
    runtimeService: f.rs,
    clock,
    logger: noopLogger,
    podLogsRootDirectory: dir,
    podStateProvider: { shouldPodContentBeRemoved: () => false, shouldPodRuntimeBeRemoved: () => false },
    removeContainer: f.removeContainer,
    policy: { minAgeMs: 60_000, maxPerPodContainer: 2, maxContainers: 6 },
    allSourcesReady: true,
    evictNonDeletedPods: false,
    ...extra,
  };
}

const exited = ContainerState.CONTAINER_EXITED;

describe('containerGC: containers', () => {
  it('removes the excess of an evict unit oldest first (upstream removeOldestN)', async () => {
    const now = clock.now();
    const f = fake([
      { id: 'c3', uid: 'u', name: 'bar', createdAt: now - 3 * hour, state: exited },
      { id: 'c0', uid: 'u', name: 'bar', createdAt: now - 6 * hour, state: exited },
      { id: 'c2', uid: 'u', name: 'bar', createdAt: now - 4 * hour, state: exited },
      { id: 'c1', uid: 'u', name: 'bar', createdAt: now - 5 * hour, state: exited },
    ]);
    await containerGC(options(f, { policy: { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 } }));
    expect(f.remaining()).toEqual(['c3']);
    expect(f.calls).toEqual(['removeContainer c0', 'removeContainer c1', 'removeContainer c2']);
  });

  it('stops a container in unknown state before removing it, and keeps it when that fails', async () => {
    const now = clock.now();
    const f = fake([
      { id: 'new', uid: 'u', name: 'bar', createdAt: now - 2 * hour, state: exited },
      {
        id: 'unk',
        uid: 'u',
        name: 'bar',
        createdAt: now - 3 * hour,
        state: ContainerState.CONTAINER_UNKNOWN,
      },
      { id: 'old', uid: 'u', name: 'bar', createdAt: now - 4 * hour, state: exited },
    ]);
    const killed: string[] = [];
    await containerGC(
      options(f, {
        policy: { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 },
        killContainer: async (id, name) => {
          killed.push(`${id}/${name}`);
          f.calls.push(`killContainer ${id}`);
        },
      }),
    );
    expect(killed).toEqual(['unk/bar']);
    expect(f.calls).toEqual(['removeContainer old', 'killContainer unk', 'removeContainer unk']);

    const g = fake([
      { id: 'new', uid: 'u', name: 'bar', createdAt: now - 2 * hour, state: exited },
      {
        id: 'unk',
        uid: 'u',
        name: 'bar',
        createdAt: now - 3 * hour,
        state: ContainerState.CONTAINER_UNKNOWN,
      },
    ]);
    await containerGC(
      options(g, {
        policy: { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 },
        killContainer: async () => {
          throw new Error('cannot stop');
        },
      }),
    );
    // A container that could not be stopped is not removed.
    expect(g.remaining()).toEqual(['new', 'unk']);
  });

  it('TestContainerGC "max limit should apply and try to keep from every pod"', async () => {
    const now = clock.now();
    const list: FakeContainer[] = [];
    for (let p = 0; p < 5; p++) {
      list.push({
        id: `p${p}-1`,
        uid: `foo${p}`,
        name: `bar${p}`,
        createdAt: now - 2 * hour + 1,
        state: exited,
      });
      list.push({ id: `p${p}-0`, uid: `foo${p}`, name: `bar${p}`, createdAt: now - 2 * hour, state: exited });
    }
    const f = fake(list);
    await containerGC(options(f));
    expect(f.remaining().sort()).toEqual(['p0-1', 'p1-1', 'p2-1', 'p3-1', 'p4-1']);
  });

  it('TestContainerGC "containers for deleted pods should be removed" (still respecting min age)', async () => {
    const now = clock.now();
    const f = fake([
      { id: 'keep1', uid: 'foo', name: 'bar', createdAt: now - 2 * hour, state: exited },
      { id: 'keep0', uid: 'foo', name: 'bar', createdAt: now - 3 * hour, state: exited },
      { id: 'young', uid: 'deleted', name: 'bar1', createdAt: now, state: exited },
      { id: 'd1', uid: 'deleted', name: 'bar1', createdAt: now - 2 * hour, state: exited },
      { id: 'd0', uid: 'deleted', name: 'bar1', createdAt: now - 3 * hour, state: exited },
    ]);
    await containerGC(
      options(f, {
        podStateProvider: {
          shouldPodContentBeRemoved: (uid) => uid === 'deleted',
          shouldPodRuntimeBeRemoved: (uid) => uid === 'deleted',
        },
      }),
    );
    expect(f.remaining()).toEqual(['keep1', 'keep0', 'young']);
  });
});

describe('containerGC: sandboxes', () => {
  it('stops a dead sandbox before removing it, oldest first, and keeps one whose stop fails', async () => {
    const now = clock.now();
    const f = fake(
      [],
      [
        { id: 's2', uid: 'u', createdAt: now - 1000, state: PodSandboxState.SANDBOX_READY },
        { id: 's0', uid: 'u', createdAt: now - 3000, state: PodSandboxState.SANDBOX_NOTREADY },
        { id: 's1', uid: 'u', createdAt: now - 2000, state: PodSandboxState.SANDBOX_NOTREADY },
        { id: 'x0', uid: 'v', createdAt: now - 3000, state: PodSandboxState.SANDBOX_NOTREADY },
        { id: 'x1', uid: 'v', createdAt: now - 2000, state: PodSandboxState.SANDBOX_NOTREADY },
      ],
      new Set(['x0']),
    );
    await containerGC(options(f));
    expect(f.calls).toEqual([
      'stopPodSandbox s0',
      'removePodSandbox s0',
      'stopPodSandbox s1',
      'removePodSandbox s1',
      'stopPodSandbox x0',
    ]);
    expect(f.sandboxes()).toEqual(['s2', 'x0', 'x1']);
  });

  it('TestSandboxGC "multiple sandboxes should be handled properly"', async () => {
    const now = clock.now();
    const f = fake(
      [{ id: 'c', uid: 'foo2', name: 'bar3', createdAt: now, state: exited, sandbox: 'b1' }],
      [
        { id: 'a1', uid: 'foo1', createdAt: now - 1, state: PodSandboxState.SANDBOX_READY },
        { id: 'a0', uid: 'foo1', createdAt: now - 2, state: PodSandboxState.SANDBOX_NOTREADY },
        { id: 'b1', uid: 'foo2', createdAt: now - 1, state: PodSandboxState.SANDBOX_NOTREADY },
        { id: 'b0', uid: 'foo2', createdAt: now - 2, state: PodSandboxState.SANDBOX_NOTREADY },
        { id: 'd0', uid: 'deleted', createdAt: now - 2, state: PodSandboxState.SANDBOX_NOTREADY },
      ],
    );
    await containerGC(
      options(f, {
        podStateProvider: {
          shouldPodContentBeRemoved: (uid) => uid === 'deleted',
          shouldPodRuntimeBeRemoved: (uid) => uid === 'deleted',
        },
      }),
    );
    expect(f.sandboxes()).toEqual(['a1', 'b1']);
  });
});

describe('containerGC: pod log directories', () => {
  it('takes the pod UID from the last "_" part of the directory name (upstream parsePodUIDFromLogsDirectory)', async () => {
    for (const d of ['ns_name_gone', 'stray', 'ns_name_kept']) fs.mkdirSync(path.join(dir, d));
    const f = fake([]);
    await containerGC(
      options(f, {
        podStateProvider: {
          shouldPodContentBeRemoved: (uid) => uid !== 'kept',
          shouldPodRuntimeBeRemoved: () => false,
        },
      }),
    );
    expect(fs.readdirSync(dir)).toEqual(['ns_name_kept']);
  });
});
