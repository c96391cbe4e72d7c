import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import type { FakeClock } from '@kubelet-kit/core/testing';

/** A fresh temporary directory. */
export function tempDir(prefix = 'vm-test-'): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Yields to the event loop so real file I/O can finish. */
export function yieldIO(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Yields event-loop turns until no file-system request is out on libuv's thread pool and no
 * child process (`mount`) runs; at least a few turns, at most a bounded number. Fake time must
 * not run ahead of real I/O, or a loaded machine would skip states a test means to see.
 */
async function settleIO(): Promise<void> {
  for (let i = 0; i < 3 || (realIOPending() && i < 100_000); i++) await yieldIO();
}

function realIOPending(): boolean {
  return process.getActiveResourcesInfo().some((r) => r.startsWith('FSReq') || r === 'ProcessWrap');
}

/**
 * Advances the fake clock in `stepMs` steps until `cond` holds, letting real file I/O (which
 * no fake clock drives) finish between steps; fails after `maxSteps`.
 */
export async function until(
  clock: FakeClock,
  cond: () => boolean | Promise<boolean>,
  stepMs = 100,
  maxSteps = 1000,
): Promise<void> {
  for (let i = 0; i < maxSteps; i++) {
    if (await cond()) return;
    await clock.tick(stepMs);
    await settleIO();
  }
  if (await cond()) return;
  throw new Error('condition not reached');
}

/** Whether a promise has settled, without waiting. */
export function track<T>(p: Promise<T>): { done: boolean; error: unknown; value: T | undefined } {
  const state: { done: boolean; error: unknown; value: T | undefined } = {
    done: false,
    error: undefined,
    value: undefined,
  };
  p.then(
    (v) => {
      state.done = true;
      state.value = v;
    },
    (e: unknown) => {
      state.done = true;
      state.error = e;
    },
  );
  return state;
}

export function makePod(
  overrides: { uid?: string; name?: string; namespace?: string; labels?: Record<string, string> } & Partial<
    Pod['spec']
  > = {},
): Pod {
  const { uid = 'uid-1', name = 'pod-1', namespace = 'ns', labels, ...spec } = overrides;
  // The default container mounts every volume: only volumes a container uses are set up.
  const volumeMounts = (spec.volumes ?? []).map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { uid, name, namespace, ...(labels ? { labels } : {}) },
    spec: {
      containers: [{ name: 'c', image: 'busybox', ...(volumeMounts.length > 0 ? { volumeMounts } : {}) }],
      ...spec,
    },
  };
}

export async function readText(p: string): Promise<string> {
  return fs.readFile(p, 'utf8');
}

export async function mode(p: string): Promise<number> {
  return (await fs.stat(p)).mode & 0o7777;
}
