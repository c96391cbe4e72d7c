import { promises as fs, type Stats } from 'node:fs';
import type { Volume } from '@kubelet-kit/core';
import { type VolumeHost, type VolumePlugin, VolumeSetUpError, type VolumeSpec } from './volume-plugin.js';

/**
 * The plugin name of hostPath volumes.
 *
 * @public
 */
export const HOST_PATH_PLUGIN_NAME = 'kubernetes.io/host-path';

async function statOrUndefined(p: string): Promise<Stats | undefined> {
  try {
    return await fs.stat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function typeCheckFailed(message: string): VolumeSetUpError {
  return new VolumeSetUpError('HostPathTypeCheckFailed', `hostPath type check failed: ${message}`);
}

/**
 * Checks (and for the `…OrCreate` types creates) the host path as upstream's `checkType`.
 * An empty type checks nothing.
 *
 * @public
 */
export async function checkHostPathType(p: string, type: string): Promise<void> {
  const st = await statOrUndefined(p);
  switch (type) {
    case '':
      return;
    case 'DirectoryOrCreate':
      if (!st) {
        await fs.mkdir(p, { recursive: true, mode: 0o755 });
        return;
      }
      if (!st.isDirectory()) throw typeCheckFailed(`${p} is not a directory`);
      return;
    case 'Directory':
      if (!st?.isDirectory()) throw typeCheckFailed(`${p} is not a directory`);
      return;
    case 'FileOrCreate':
      if (!st) {
        // As upstream, the parent directory must already exist.
        const handle = await fs.open(p, 'a', 0o644);
        await handle.close();
        return;
      }
      if (!st.isFile()) throw typeCheckFailed(`${p} is not a file`);
      return;
    case 'File':
      if (!st?.isFile()) throw typeCheckFailed(`${p} is not a file`);
      return;
    case 'Socket':
      if (!st?.isSocket()) throw typeCheckFailed(`${p} is not a socket file`);
      return;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) throw typeCheckFailed(`${p} is not a character device`);
      return;
    case 'BlockDevice':
      if (!st?.isBlockDevice()) throw typeCheckFailed(`${p} is not a block device`);
      return;
    default:
      throw typeCheckFailed(`${p}: unknown type ${JSON.stringify(type)}`);
  }
}

/**
 * hostPath (upstream `pkg/volume/hostpath`): a path on the node, after the type check and policy.
 *
 * @public
 */
export class HostPathPlugin implements VolumePlugin {
  readonly name = HOST_PATH_PLUGIN_NAME;
  readonly requiresRemount = false;
  readonly readOnly = false;
  readonly usesPodVolumeDir = false;
  readonly #host: VolumeHost;

  constructor(options: { host: VolumeHost }) {
    this.#host = options.host;
  }

  canSupport(volume: Volume): boolean {
    return volume.hostPath !== undefined;
  }

  getPath(spec: VolumeSpec): string {
    return spec.volume.hostPath?.path ?? '';
  }

  async setUp(spec: VolumeSpec): Promise<void> {
    const source = spec.volume.hostPath;
    const p = source?.path ?? '';
    const type = source?.type ?? '';
    if (!p.startsWith('/'))
      throw new VolumeSetUpError('InvalidHostPath', `hostPath ${JSON.stringify(p)} must be absolute`);
    // Upstream's SetUp refuses any `..` element (ValidatePathNoBacksteps); checked before the
    // policy, so `/srv/../etc` cannot pass a prefix rule.
    if (p.split('/').includes('..'))
      throw new VolumeSetUpError('InvalidHostPath', `invalid HostPath \`${p}\`: must not contain '..'`);
    const policy = this.#host.hostPathPolicy;
    if (policy) {
      const decision = await policy({ pod: spec.pod, volumeName: spec.volume.name, path: p, type });
      if (!decision.allowed) {
        throw new VolumeSetUpError(
          'HostPathDenied',
          `hostPath ${p} denied by policy${decision.reason ? `: ${decision.reason}` : ''}`,
        );
      }
    }
    await checkHostPathType(p, type);
  }

  async tearDown(): Promise<void> {
    // Nothing of the pod's lives on the host path.
  }
}
