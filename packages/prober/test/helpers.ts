import type {
  CommandRunner,
  Container,
  ContainerStatus,
  ExecResult,
  Pod,
  PodStatus,
  PodStatusProvider,
  Probe,
  RunInContainerOptions,
} from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import type { ProbeType } from '../src/index.js';

export const podUid = 'pod-uid-1';
export const containerName = 'app';
export const containerId = 'containerd://c1';

/** A pod with one container carrying `probe` as its `probeType` probe. */
export function podWith(probeType: ProbeType, probe: Probe, extra: Partial<Container> = {}): Pod {
  const field =
    probeType === 'Liveness'
      ? 'livenessProbe'
      : probeType === 'Readiness'
        ? 'readinessProbe'
        : 'startupProbe';
  return {
    metadata: { name: 'web', namespace: 'ns', uid: podUid },
    spec: { containers: [{ name: containerName, image: 'busybox', [field]: probe, ...extra }] },
  };
}

export function execProbe(overrides: Partial<Probe> = {}): Probe {
  return { exec: { command: ['cat', '/tmp/health'] }, periodSeconds: 1, ...overrides };
}

export function runningStatus(
  startedAt: number,
  opts: { id?: string; started?: boolean; name?: string } = {},
): ContainerStatus {
  return {
    name: opts.name ?? containerName,
    image: 'busybox',
    imageID: '',
    containerID: opts.id ?? containerId,
    ready: false,
    restartCount: 0,
    started: opts.started ?? true,
    state: { running: { startedAt: new Date(startedAt).toISOString() } },
  };
}

export function terminatedStatus(opts: { id?: string; exitCode?: number } = {}): ContainerStatus {
  return {
    name: containerName,
    image: 'busybox',
    imageID: '',
    containerID: opts.id ?? containerId,
    ready: false,
    restartCount: 0,
    started: false,
    state: { terminated: { exitCode: opts.exitCode ?? 1 } },
  };
}

export function pendingStatus(): ContainerStatus {
  return {
    name: containerName,
    image: 'busybox',
    imageID: '',
    containerID: containerId,
    ready: false,
    restartCount: 0,
    state: { waiting: { reason: 'ContainerCreating' } },
  };
}

/** A status provider backed by a map the test edits. */
export class MapStatusProvider implements PodStatusProvider {
  readonly statuses = new Map<string, PodStatus>();
  getPodStatus(uid: string): PodStatus | undefined {
    return this.statuses.get(uid);
  }
  setContainer(status: ContainerStatus, phase = 'Running', uid = podUid): void {
    this.statuses.set(uid, { phase, podIP: '127.0.0.1', containerStatuses: [status] });
  }
}

/** A command runner whose exit code (or error) the test sets; it records each call. */
export class ScriptedRunner implements CommandRunner {
  exitCode = 0;
  output = '';
  error: Error | undefined;
  /** Calls before the one in progress resolve; set to hold a call open. */
  hold: Promise<void> | undefined;
  readonly calls: RunInContainerOptions[] = [];
  async runInContainer(options: RunInContainerOptions): Promise<ExecResult> {
    this.calls.push(options);
    if (this.hold) await this.hold;
    if (this.error) throw this.error;
    return {
      stdout: new TextEncoder().encode(this.output),
      stderr: new Uint8Array(),
      exitCode: this.exitCode,
    };
  }
}

export function newClock(): FakeClock {
  return new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
}
