import path from 'node:path';
import type { Subpath, Subpather } from '@kubelet-kit/core';

/** Records what makeMounts asks of its subpather and answers with a bind target's path. */
export class RecordingSubpather implements Subpather {
  readonly made: { subdir: string; base: string; perm: number }[] = [];
  readonly prepared: Subpath[] = [];
  /** When set, prepareSafeSubpath fails with it. */
  prepareError: Error | undefined;

  async safeMakeDir(subdir: string, base: string, perm: number): Promise<void> {
    this.made.push({ subdir, base, perm });
  }

  async prepareSafeSubpath(subpath: Subpath): Promise<string> {
    this.prepared.push(subpath);
    if (this.prepareError) throw this.prepareError;
    return path.join(
      subpath.podDir,
      'volume-subpaths',
      subpath.volumeName,
      subpath.containerName,
      String(subpath.volumeMountIndex),
    );
  }

  async cleanSubPaths(): Promise<void> {}
}
