import path from 'node:path';
import type { Subpath, Subpather } from '@kubelet-kit/core';

/**
 * A `Subpather` for tests that need no mounts (upstream `subpath.FakeSubpath`): hands the
 * joined path to the runtime unchecked and records the calls. Never for a real node.
 *
 * @public
 */
export class FakeSubpather implements Subpather {
  /** Calls, in order: `mkdir <base>/<subdir>`, `prepare <path>`, `clean <podDir> <volume>`. */
  readonly calls: string[] = [];

  async safeMakeDir(subdir: string, base: string): Promise<void> {
    this.calls.push(`mkdir ${path.join(base, subdir)}`);
  }

  async prepareSafeSubpath(subpath: Subpath): Promise<string> {
    this.calls.push(`prepare ${subpath.path}`);
    return subpath.path;
  }

  async cleanSubPaths(podDir: string, volumeName: string): Promise<void> {
    this.calls.push(`clean ${podDir} ${volumeName}`);
  }
}
