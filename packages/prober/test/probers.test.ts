import net, { type AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { CommandTimeoutError, type Pod, RealClock } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProbeError } from '../src/errors.js';
import { execProbe, expandContainerCommandOnlyStatic, maxExecOutputLength } from '../src/probe/exec.js';
import {
  grpcProbe,
  type HealthCheckRequest,
  type HealthCheckResponse,
  healthServiceDefinition,
} from '../src/probe/grpc.js';
import { resolveContainerPort } from '../src/probe/port.js';
import { tcpProbe } from '../src/probe/tcp.js';
import { getProbeTerminationGracePeriodSeconds, Prober } from '../src/prober.js';
import { ScriptedRunner } from './helpers.js';

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('tcpProbe', () => {
  let listener: net.Server;
  let port = 0;
  beforeAll(async () => {
    listener = net.createServer((sock) => sock.end());
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    port = (listener.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => listener.close(r));
  });

  it('connecting is a success', async () => {
    expect(await tcpProbe({ host: '127.0.0.1', port, timeoutMs: 5_000, clock: new RealClock() })).toEqual({
      result: 'Success',
      output: '',
    });
  });

  it('a refused connection is a failure with the dial error', async () => {
    const dead = await freePort();
    const r = await tcpProbe({ host: '127.0.0.1', port: dead, timeoutMs: 5_000, clock: new RealClock() });
    expect(r.result).toBe('Failure');
    expect(r.output).toBe(`dial tcp 127.0.0.1:${dead}: connect ECONNREFUSED 127.0.0.1:${dead}`);
  });

  it('a timeout on the injected clock is a failure', async () => {
    const clock = new FakeClock();
    // 192.0.2.0/24 is TEST-NET-1: a connect there hangs (or fails) but never succeeds.
    const pending = tcpProbe({ host: '192.0.2.1', port: 9, timeoutMs: 1_000, clock });
    clock.advance(1_000);
    const r = await pending;
    expect(r.result).toBe('Failure');
    expect(r.output).toMatch(/^dial tcp 192\.0\.2\.1:9: /);
  });
});

describe('grpcProbe', () => {
  let server: grpc.Server;
  let port = 0;
  let bare: grpc.Server;
  let barePort = 0;
  beforeAll(async () => {
    server = new grpc.Server();
    const statuses: Record<string, number> = { '': 1, db: 2 };
    server.addService(healthServiceDefinition, {
      Check: (
        call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
        callback: grpc.sendUnaryData<HealthCheckResponse>,
      ) => {
        const status = statuses[call.request.service];
        if (call.request.service === 'slow')
          callback({ code: grpc.status.DEADLINE_EXCEEDED, details: 'too slow' });
        else if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
        else callback(null, { status });
      },
    });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    bare = new grpc.Server();
    barePort = await new Promise<number>((resolve, reject) =>
      bare.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
  });
  afterAll(() => {
    server.forceShutdown();
    bare.forceShutdown();
  });

  const probe = (p: number, service: string) =>
    grpcProbe({ host: '127.0.0.1', port: p, service, timeoutMs: 5_000, clock: new RealClock() });

  it('SERVING is a success', async () => {
    expect(await probe(port, '')).toEqual({ result: 'Success', output: 'service healthy' });
  });

  it('NOT_SERVING is a failure naming the status', async () => {
    expect(await probe(port, 'db')).toEqual({
      result: 'Failure',
      output: 'service unhealthy (responded with "NOT_SERVING")',
    });
  });

  it('an RPC error is a failure', async () => {
    const r = await probe(port, 'nope');
    expect(r.result).toBe('Failure');
    // Go's status error spells the code as codes.Code's String(): NotFound, not NOT_FOUND.
    expect(r.output).toBe(
      'error: health rpc probe failed: rpc error: code = NotFound desc = unknown service',
    );
  });

  it('a DEADLINE_EXCEEDED status from the server is the rpc timeout message (upstream grpc.Probe)', async () => {
    const r = await probe(port, 'slow');
    expect(r).toEqual({ result: 'Failure', output: 'timeout: health rpc did not complete within 5s' });
  });

  it('a server without the health service is a failure', async () => {
    const r = await probe(barePort, '');
    expect(r.result).toBe('Failure');
    expect(r.output).toMatch(/^error: this server does not implement the grpc health protocol/);
  });

  it('nothing listening is a failure', async () => {
    const r = await probe(await freePort(), '');
    expect(r.result).toBe('Failure');
    expect(r.output).toMatch(/^error: failed to connect service at "127\.0\.0\.1:\d+"/);
  });
});

describe('execProbe (upstream pkg/probe/exec)', () => {
  const run = (runner: ScriptedRunner) =>
    execProbe({ runner, containerId: 'c1', command: ['cat', '/tmp/health'], timeoutMs: 2_000 });

  it('exit 0 is a success with the output', async () => {
    const runner = new ScriptedRunner();
    runner.output = 'fine';
    expect(await run(runner)).toEqual({ result: 'Success', output: 'fine' });
    expect(runner.calls[0]).toMatchObject({
      containerId: 'c1',
      cmd: ['cat', '/tmp/health'],
      timeoutMs: 2_000,
    });
  });

  it('a non-zero exit is a failure with the output (capped at 10 KiB)', async () => {
    const runner = new ScriptedRunner();
    runner.exitCode = 1;
    runner.output = 'y'.repeat(20_000);
    const r = await run(runner);
    expect(r.result).toBe('Failure');
    expect(r.output).toHaveLength(maxExecOutputLength);
  });

  it('a timeout is a failure', async () => {
    const runner = new ScriptedRunner();
    runner.error = new CommandTimeoutError('command "cat /tmp/health" timed out');
    expect(await run(runner)).toEqual({ result: 'Failure', output: 'command "cat /tmp/health" timed out' });
  });

  it('any other runner error is an error', async () => {
    const runner = new ScriptedRunner();
    runner.error = new Error('container not found');
    await expect(run(runner)).rejects.toBeInstanceOf(ProbeError);
  });

  it('expands $(VAR) from the container env values only', () => {
    const env = [
      { name: 'FILE', value: '/tmp/health' },
      { name: 'FROM', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ];
    expect(
      expandContainerCommandOnlyStatic(['cat', '$(FILE)', '$(FROM)', '$(MISSING)', '$$(FILE)', '$(x'], env),
    ).toEqual(['cat', '/tmp/health', '', '$(MISSING)', '$(FILE)', '$(x']);
  });
});

describe('resolveContainerPort', () => {
  const c = { name: 'c', ports: [{ name: 'http', containerPort: 8080 }] };
  it('resolves numbers, names and numeric strings; rejects the rest', () => {
    expect(resolveContainerPort(80, c)).toBe(80);
    expect(resolveContainerPort('http', c)).toBe(8080);
    expect(resolveContainerPort('9090', c)).toBe(9090);
    expect(() => resolveContainerPort('grpc', c)).toThrow(ProbeError);
    expect(() => resolveContainerPort(0, c)).toThrow('invalid port number: 0');
  });
});

describe('Prober (upstream TestProbe)', () => {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'ns', uid: 'u1' },
    spec: { containers: [{ name: 'app' }] },
  };
  const status = { podIP: '127.0.0.1' };

  function prober(runner: ScriptedRunner) {
    const recorder = new InMemoryEventRecorder();
    return { recorder, prober: new Prober({ runner, clock: new RealClock(), recorder }) };
  }

  it('maps exec outcomes: success, failure with an Unhealthy event', async () => {
    const runner = new ScriptedRunner();
    const { prober: p, recorder } = prober(runner);
    const container = { name: 'app', livenessProbe: { exec: { command: ['true'] }, timeoutSeconds: 3 } };
    expect(await p.probe('Liveness', pod, status, container, 'containerd://abc')).toBe('Success');
    expect(runner.calls[0]).toMatchObject({ containerId: 'abc', timeoutMs: 3_000 });
    runner.exitCode = 2;
    runner.output = 'bad';
    expect(await p.probe('Liveness', pod, status, container, 'containerd://abc')).toBe('Failure');
    expect(recorder.events).toMatchObject([{ reason: 'Unhealthy', message: 'Liveness probe failed: bad' }]);
    // A container without that probe is a success.
    expect(await p.probe('Readiness', pod, status, container, 'containerd://abc')).toBe('Success');
  });

  it('retries an error 3 times, then reports and rethrows it', async () => {
    const runner = new ScriptedRunner();
    runner.error = new Error('no such container');
    const { prober: p, recorder } = prober(runner);
    const container = { name: 'app', readinessProbe: { exec: { command: ['true'] } } };
    await expect(p.probe('Readiness', pod, status, container, 'containerd://abc')).rejects.toThrow(
      'no such container',
    );
    expect(runner.calls).toHaveLength(3);
    expect(recorder.events).toMatchObject([
      {
        reason: 'Unhealthy',
        message: 'Readiness probe errored and resulted in unknown state: no such container',
      },
    ]);
  });

  it('does not retry a failure', async () => {
    const runner = new ScriptedRunner();
    runner.exitCode = 1;
    const { prober: p } = prober(runner);
    const container = { name: 'app', readinessProbe: { exec: { command: ['false'] } } };
    expect(await p.probe('Readiness', pod, status, container, 'containerd://abc')).toBe('Failure');
    expect(runner.calls).toHaveLength(1);
  });

  it('a probe without a handler is an error', async () => {
    const { prober: p } = prober(new ScriptedRunner());
    const container = { name: 'app', livenessProbe: {} };
    await expect(p.probe('Liveness', pod, status, container, 'containerd://abc')).rejects.toMatchObject({
      code: 'MissingProbeHandler',
      message: 'missing probe handler for web_ns(u1):app',
    });
  });

  it('TCP probes target the pod IP by default', async () => {
    const listener = net.createServer((s) => s.end());
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    const port = (listener.address() as AddressInfo).port;
    const { prober: p } = prober(new ScriptedRunner());
    const container = {
      name: 'app',
      ports: [{ name: 'db', containerPort: port }],
      livenessProbe: { tcpSocket: { port: 'db' } },
    };
    expect(await p.probe('Liveness', pod, status, container, 'containerd://abc')).toBe('Success');
    await new Promise((r) => listener.close(r));
  });

  it('exposes the probe-level termination grace period', () => {
    const container = {
      name: 'app',
      livenessProbe: { exec: { command: ['x'] }, terminationGracePeriodSeconds: 7 },
    };
    expect(getProbeTerminationGracePeriodSeconds(container, 'Liveness')).toBe(7);
    expect(getProbeTerminationGracePeriodSeconds(container, 'Startup')).toBeUndefined();
  });
});
