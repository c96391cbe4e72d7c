// End to end: liveness, readiness and startup probes through `kubelet-kit run` on the private
// containerd, each case adapted from Kubernetes' node conformance tests
// (test/e2e/common/node/container_probe.go), with delays and periods shrunk to seconds.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/probes.test.ts
//
// Every pod is written before the agent starts, so they all run in parallel in one agent; a
// poller records /pods every half second, and each case then reads that history. Restart counts
// are checked on every snapshot (monotonic, or zero throughout), readiness against a lower bound.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Container, ContainerStatus, Pod, Probe } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  podNamed,
  removeNodePods,
  startAgent,
  waitFor,
} from './support/agent-process.js';

const nodeName = `probes-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;

// The node IP the agent is given (--node-ip) and so the pod IP of host-network pods: the first
// non-internal IPv4, as the agent would pick itself. The gRPC server below listens on 0.0.0.0.
const nodeIP =
  Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a?.family === 'IPv4' && !a.internal)?.address ?? '127.0.0.1';

// ---- a gRPC health server in the test process --------------------------------------------------
// No test image serves grpc.health.v1.Health, so the test process does, on a port of the host, and
// host-network pods point their gRPC probes at it (the probe host is the pod IP = the node IP).
// The messages are encoded by hand here, independently of the prober's protobufjs definitions:
// HealthCheckRequest { string service = 1 }, HealthCheckResponse { ServingStatus status = 1 }.
const SERVING = 1;
const NOT_SERVING = 2;

function readVarint(buf: Buffer, offset: number): [number, number] {
  let value = 0;
  let shift = 0;
  let pos = offset;
  for (;;) {
    const byte = buf[pos++];
    if (byte === undefined) throw new Error('truncated varint');
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, pos];
    shift += 7;
  }
}

function decodeHealthCheckRequest(buf: Buffer): { service: string } {
  let service = '';
  let pos = 0;
  while (pos < buf.length) {
    const [tag, afterTag] = readVarint(buf, pos);
    const wireType = tag & 7;
    if (wireType === 0) {
      pos = readVarint(buf, afterTag)[1];
    } else if (wireType === 2) {
      const [len, start] = readVarint(buf, afterTag);
      if (tag >> 3 === 1) service = buf.subarray(start, start + len).toString('utf8');
      pos = start + len;
    } else {
      throw new Error(`unexpected wire type ${wireType}`);
    }
  }
  return { service };
}

// Field 1, varint: status values are below 128, so one byte.
const encodeHealthCheckResponse = (m: { status: number }): Buffer => Buffer.from([0x08, m.status]);

const healthService: grpc.ServiceDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: (): Buffer => Buffer.alloc(0),
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: (): { status: number } => ({ status: 0 }),
  },
};

// ---- pods -------------------------------------------------------------------------------------
const readyDelaySeconds = 8;

type Snapshot = { readonly at: number; readonly pods: readonly Pod[] };

// Fast probes: a 1 s period, a generous timeout (as upstream's "5s, CI can be slow").
const fast = { periodSeconds: 1, timeoutSeconds: 5, failureThreshold: 1 } satisfies Probe;
const sh = (script: string) => ['sh', '-c', script];
// Serves /www over HTTP on `port`; removes /www/healthz after `seconds` (the agnhost "liveness"
// server of upstream answers 200 for 10 s, then errors).
const httpdDroppingHealthz = (port: number, seconds: number) =>
  `mkdir -p /www; echo ok >/www/healthz; httpd -f -p ${port} -h /www & sleep ${seconds}; rm -f /www/healthz; wait`;

function pod(
  name: string,
  container: Omit<Container, 'name' | 'image'>,
  spec: Partial<NonNullable<Pod['spec']>> = {},
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      ...spec,
      containers: [{ name: 'c', image: busybox, ...container }],
    },
  };
}

function manifests(grpcPort: number): Pod[] {
  return [
    // "should be restarted with a exec "cat /tmp/health" liveness probe". An emptyDir remembers
    // the first run, so the second run keeps its file: exactly one restart.
    pod(
      'exec-restart',
      {
        command: sh(
          'echo ok >/tmp/health; [ -e /state/ran ] && exec sleep 600; touch /state/ran; sleep 3; rm -f /tmp/health; exec sleep 600',
        ),
        volumeMounts: [{ name: 'state', mountPath: '/state' }],
        livenessProbe: { ...fast, exec: { command: ['cat', '/tmp/health'] }, initialDelaySeconds: 1 },
      },
      { volumes: [{ name: 'state', emptyDir: {} }] },
    ),
    // "should *not* be restarted with a exec "cat /tmp/health" liveness probe".
    pod('exec-ok', {
      command: sh('echo ok >/tmp/health; exec sleep 600'),
      livenessProbe: { ...fast, exec: { command: ['cat', '/tmp/health'] }, initialDelaySeconds: 1 },
    }),
    // "should be restarted with a /healthz http liveness probe": busybox httpd answers 404 once
    // the file is gone.
    pod('http-404', {
      command: sh(httpdDroppingHealthz(8080, 3)),
      livenessProbe: { ...fast, httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 1 },
    }),
    // "should *not* be restarted with a tcp:8080 liveness probe": the HTTP handler starts failing
    // but the socket stays open.
    pod('tcp-open', {
      command: sh(httpdDroppingHealthz(8080, 3)),
      livenessProbe: { ...fast, tcpSocket: { port: 8080 }, initialDelaySeconds: 2 },
    }),
    // "with readiness probe should not be ready before initial delay and never restart".
    pod('ready-delay', {
      command: sh('mkdir -p /www; echo ok >/www/index.html; exec httpd -f -p 80 -h /www'),
      ports: [{ containerPort: 80 }],
      readinessProbe: { ...fast, httpGet: { path: '/', port: 80 }, initialDelaySeconds: readyDelaySeconds },
    }),
    // "with readiness probe that fails should never be ready and never restart": upstream's
    // failing probe targets port 81, where nothing listens.
    pod('ready-fail', {
      command: sh('mkdir -p /www; echo ok >/www/index.html; exec httpd -f -p 80 -h /www'),
      ports: [{ containerPort: 80 }],
      readinessProbe: { ...fast, httpGet: { path: '/', port: 81 }, initialDelaySeconds: 1 },
    }),
    // "should have monotonically increasing restart count".
    pod('monotonic', {
      command: sh(httpdDroppingHealthz(8080, 2)),
      livenessProbe: { ...fast, httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 1 },
    }),
    // "should *not* be restarted by liveness probe because startup probe delays it".
    pod('startup-holds', {
      command: sh('exec sleep 600'),
      livenessProbe: { ...fast, exec: { command: ['false'] }, initialDelaySeconds: 1 },
      startupProbe: { ...fast, exec: { command: ['false'] }, initialDelaySeconds: 1, failureThreshold: 1000 },
    }),
    // "should be restarted by liveness probe after startup probe enables it": the same failing
    // liveness probe, which shows the one above would have restarted the container.
    pod('startup-then-liveness', {
      command: sh('sleep 3; echo ok >/tmp/startup; exec sleep 600'),
      livenessProbe: { ...fast, exec: { command: ['false'] }, initialDelaySeconds: 1 },
      startupProbe: {
        ...fast,
        exec: { command: ['cat', '/tmp/startup'] },
        initialDelaySeconds: 1,
        failureThreshold: 60,
      },
    }),
    // "should *not* be restarted with a GRPC liveness probe", plus a gRPC readiness probe.
    pod(
      'grpc-ok',
      {
        command: sh('exec sleep 600'),
        livenessProbe: { ...fast, grpc: { port: grpcPort }, initialDelaySeconds: 1 },
        readinessProbe: { ...fast, grpc: { port: grpcPort, service: 'ready' }, initialDelaySeconds: 1 },
      },
      { hostNetwork: true },
    ),
    // "should be restarted with a GRPC liveness probe" (upstream: a wrong port; here a service the
    // server reports NOT_SERVING).
    pod(
      'grpc-fail',
      {
        command: sh('exec sleep 600'),
        livenessProbe: { ...fast, grpc: { port: grpcPort, service: 'broken' }, initialDelaySeconds: 1 },
      },
      { hostNetwork: true },
    ),
  ];
}
const statusOf = (p: Pod | undefined): ContainerStatus | undefined => p?.status?.containerStatuses?.[0];
const isPodReady = (p: Pod | undefined) =>
  p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const startedAtMs = (s: ContainerStatus | undefined) => {
  const at = s?.state?.running?.startedAt;
  return at ? Date.parse(at) : undefined;
};

describe('probes through kubelet-kit run on containerd', () => {
  let dir: string;
  let agent: AgentProcess | undefined;
  let grpcServer: grpc.Server | undefined;
  const grpcChecks: string[] = [];
  const history: Snapshot[] = [];
  let polling = true;
  let poller: Promise<void> | undefined;

  /** Every snapshot of the pod `name` (short name), oldest first. */
  const seen = (name: string) =>
    history.flatMap((s) => {
      const p = podNamed(s.pods, podName(name));
      return p ? [{ at: s.at, pod: p }] : [];
    });

  /** Waits until the history covers `ms` of the first container run of `name`, and returns it. */
  async function observeFor(name: string, ms: number) {
    const first = await waitFor(`${name} running`, async () => {
      for (const s of seen(name)) {
        const at = startedAtMs(statusOf(s.pod));
        if (at !== undefined) return at;
      }
      return undefined;
    });
    await waitFor(
      `${ms} ms of ${name}`,
      async () => (history.at(-1)!.at >= first + ms ? true : undefined),
      ms + 60_000,
    );
    return { startedAt: first, snapshots: seen(name) };
  }

  const restartCounts = (name: string) => seen(name).map((s) => statusOf(s.pod)?.restartCount ?? 0);
  const events = (name: string, reason: string) =>
    agent!.logs
      .filter((l) => l.event === reason && String(l.object).endsWith(`/${podName(name)}`))
      .map((l) => String(l.msg));

  /** Waits for the restart count of `name` to reach `n`; checks it never went down on the way. */
  async function waitForRestarts(name: string, n: number, timeoutMs = 90_000) {
    await waitFor(
      `${name} restarted ${n} times`,
      async () =>
        (statusOf(podNamed(await agent!.pods(), podName(name)))?.restartCount ?? 0) >= n ? true : undefined,
      timeoutMs,
    );
    const counts = restartCounts(name);
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]!);
    return counts;
  }

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-probes-e2e-'));
    const manifestDir = path.join(dir, 'manifests');
    fs.mkdirSync(manifestDir);

    grpcServer = new grpc.Server();
    grpcServer.addService(healthService, {
      Check: (
        call: grpc.ServerUnaryCall<{ service: string }, { status: number }>,
        cb: grpc.sendUnaryData<{ status: number }>,
      ) => {
        grpcChecks.push(call.request.service);
        cb(null, { status: call.request.service === 'broken' ? NOT_SERVING : SERVING });
      },
    });
    const grpcPort = await new Promise<number>((resolve, reject) =>
      grpcServer!.bindAsync('0.0.0.0:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );

    for (const p of manifests(grpcPort)) {
      fs.writeFileSync(path.join(manifestDir, `${p.metadata!.name}.json`), JSON.stringify(p));
    }
    agent = await startAgent({
      nodeName,
      manifestDir,
      rootDir: path.join(dir, 'root'),
      args: ['--node-ip', nodeIP],
    });
    poller = (async () => {
      while (polling) {
        try {
          const pods = await agent!.pods();
          // Stamped after the answer: anything seen was true by then (a sound lower bound).
          history.push({ at: Date.now(), pods });
        } catch {
          // the agent is stopping
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
  });

  afterAll(async () => {
    polling = false;
    await poller;
    await agent?.stop();
    await removeNodePods(nodeName);
    grpcServer?.forceShutdown();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('restarts a container once its exec liveness probe `cat /tmp/health` fails (restart count 1)', async () => {
    await waitForRestarts('exec-restart', 1);
    // The second run keeps its file: the count stays at 1 while the new container runs.
    const restarted = await waitFor('the restarted container running', async () => {
      const s = statusOf(podNamed(await agent!.pods(), podName('exec-restart')));
      return s?.restartCount === 1 && s.state?.running ? startedAtMs(s) : undefined;
    });
    await waitFor('6 s of the second run', async () =>
      history.at(-1)!.at >= restarted! + 6000 ? true : undefined,
    );
    expect(new Set(restartCounts('exec-restart'))).toEqual(new Set([0, 1]));
    const last = statusOf(seen('exec-restart').at(-1)?.pod);
    expect(last?.restartCount).toBe(1);
    expect(last?.state?.running).toBeDefined();
    expect(last?.lastState?.terminated).toBeDefined();
    expect(events('exec-restart', 'Unhealthy').some((m) => m.startsWith('Liveness probe failed:'))).toBe(
      true,
    );
    expect(events('exec-restart', 'Killing')).toContain(
      'Container c failed liveness probe, will be restarted',
    );
  });

  it('does not restart a container whose exec liveness probe `cat /tmp/health` keeps succeeding', async () => {
    const { snapshots } = await observeFor('exec-ok', 15_000);
    expect(snapshots.map((s) => statusOf(s.pod)?.restartCount ?? 0).every((n) => n === 0)).toBe(true);
    expect(isPodReady(snapshots.at(-1)?.pod)).toBe(true);
    expect(events('exec-ok', 'Unhealthy')).toEqual([]);
  });

  it('restarts a container whose HTTP liveness probe gets a 404 from busybox httpd', async () => {
    await waitForRestarts('http-404', 1);
    expect(events('http-404', 'Unhealthy')).toContain(
      'Liveness probe failed: HTTP probe failed with statuscode: 404',
    );
  });

  it('never restarts a container whose TCP liveness probe finds its port open', async () => {
    const { snapshots } = await observeFor('tcp-open', 15_000);
    expect(snapshots.map((s) => statusOf(s.pod)?.restartCount ?? 0).every((n) => n === 0)).toBe(true);
    expect(isPodReady(snapshots.at(-1)?.pod)).toBe(true);
    expect(events('tcp-open', 'Unhealthy')).toEqual([]);
  });

  it('keeps a pod not Ready before its readiness initialDelaySeconds, then Ready, and never restarts it', async () => {
    const ready = await waitFor('ready-delay Ready', async () => {
      const p = podNamed(await agent!.pods(), podName('ready-delay'));
      return isPodReady(p) ? p : undefined;
    });
    const startedAt = startedAtMs(statusOf(ready))!;
    // Timestamps have whole seconds; flooring both keeps the bound sound.
    const readyAt = Date.parse(
      ready.status!.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime!,
    );
    expect(readyAt - startedAt).toBeGreaterThanOrEqual(readyDelaySeconds * 1000);
    const snapshots = seen('ready-delay');
    // Nothing observed before started + delay was Ready (and something was observed then).
    const early = snapshots.filter((s) => s.at < startedAt + readyDelaySeconds * 1000);
    expect(early.some((s) => statusOf(s.pod)?.state?.running)).toBe(true);
    expect(early.filter((s) => isPodReady(s.pod) || statusOf(s.pod)?.ready)).toEqual([]);
    expect(statusOf(ready)?.restartCount).toBe(0);
    expect(snapshots.every((s) => (statusOf(s.pod)?.restartCount ?? 0) === 0)).toBe(true);
  });

  it('never makes Ready nor restarts a pod whose readiness probe fails', async () => {
    const { snapshots } = await observeFor('ready-fail', 15_000);
    const running = snapshots.filter((s) => statusOf(s.pod)?.state?.running);
    expect(running.length).toBeGreaterThan(10);
    expect(snapshots.filter((s) => isPodReady(s.pod) || statusOf(s.pod)?.ready)).toEqual([]);
    expect(snapshots.every((s) => (statusOf(s.pod)?.restartCount ?? 0) === 0)).toBe(true);
    expect(snapshots.at(-1)?.pod.status?.phase).toBe('Running');
    expect(events('ready-fail', 'Unhealthy').some((m) => m.startsWith('Readiness probe failed:'))).toBe(true);
  });

  it('raises the restart count monotonically under a failing liveness probe', async () => {
    // Restarts go through the crash-loop backoff (0 s, then 10 s, then 20 s…).
    const counts = await waitForRestarts('monotonic', 2, 150_000);
    // Every value from 0 to the last one is seen, in order (each restart counted once).
    const distinct = counts.filter((n, i) => i === 0 || n !== counts[i - 1]);
    expect(distinct[0]).toBe(0);
    expect(distinct.at(-1)).toBeGreaterThanOrEqual(1);
    expect(
      events('monotonic', 'Killing').filter(
        (m) => m === 'Container c failed liveness probe, will be restarted',
      ).length,
    ).toBeGreaterThanOrEqual(1);
  });

  it('holds liveness back while the startup probe has not succeeded', async () => {
    const { snapshots } = await observeFor('startup-holds', 15_000);
    expect(snapshots.every((s) => (statusOf(s.pod)?.restartCount ?? 0) === 0)).toBe(true);
    expect(snapshots.every((s) => statusOf(s.pod)?.started !== true)).toBe(true);
    expect(snapshots.every((s) => !isPodReady(s.pod))).toBe(true);
    const unhealthy = events('startup-holds', 'Unhealthy');
    expect(unhealthy.some((m) => m.startsWith('Startup probe failed:'))).toBe(true);
    expect(unhealthy.filter((m) => m.startsWith('Liveness probe failed:'))).toEqual([]);
  });

  it('lets the same failing liveness probe restart the container once the startup probe succeeds', async () => {
    await waitForRestarts('startup-then-liveness', 1);
    const started = seen('startup-then-liveness').find((s) => statusOf(s.pod)?.started === true);
    expect(started).toBeDefined();
    expect(
      events('startup-then-liveness', 'Unhealthy').some((m) => m.startsWith('Liveness probe failed:')),
    ).toBe(true);
  });

  it('probes a host-network pod over gRPC health checking served by the test process', async () => {
    const { snapshots } = await observeFor('grpc-ok', 15_000);
    const last = snapshots.at(-1)!.pod;
    expect(last.status?.podIP).toBe(nodeIP);
    expect(isPodReady(last)).toBe(true);
    expect(snapshots.every((s) => (statusOf(s.pod)?.restartCount ?? 0) === 0)).toBe(true);
    // Both probes reached the server: liveness asks about the server (""), readiness about "ready".
    expect(grpcChecks.filter((s) => s === '').length).toBeGreaterThanOrEqual(5);
    expect(grpcChecks.filter((s) => s === 'ready').length).toBeGreaterThanOrEqual(5);
    expect(events('grpc-ok', 'Unhealthy')).toEqual([]);

    await waitForRestarts('grpc-fail', 1);
    expect(grpcChecks).toContain('broken');
    expect(events('grpc-fail', 'Unhealthy')).toContain(
      'Liveness probe failed: service unhealthy (responded with "NOT_SERVING")',
    );
  });
});
