import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';

/** A fresh temporary directory. */
export function tempDir(prefix = 'vm-test-'): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
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
