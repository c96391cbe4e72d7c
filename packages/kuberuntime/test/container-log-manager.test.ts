import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { FakeClock } from '@kubelet-kit/core/testing';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContainerLogManager } from '../src/container-log-manager.js';

let dir: string;
let server: InMemoryCriServer;
let rs: RuntimeServiceClient;
let clock: FakeClock;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-logrotate-'));
  clock = new FakeClock(new Date(2026, 0, 2, 3, 4, 5).getTime());
  server = await InMemoryCriServer.start({ clock, images: ['busybox'] });
  rs = new RuntimeServiceClient({ endpoint: server.endpoint });
});
afterEach(async () => {
  rs.close();
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A running container whose log is `<dir>/<name>/0.log`. */
async function container(name: string, start = true): Promise<{ id: string; log: string }> {
  const sandboxConfig = {
    metadata: { name: `pod-${name}`, namespace: 'default', uid: `uid-${name}`, attempt: 0 },
    logDirectory: dir,
  };
  const { podSandboxId } = await rs.runPodSandbox({ config: sandboxConfig });
  const { containerId } = await rs.createContainer({
    podSandboxId,
    config: { metadata: { name, attempt: 0 }, image: { image: 'busybox' }, logPath: `${name}/0.log` },
    sandboxConfig,
  });
  if (start) await rs.startContainer({ containerId });
  return { id: containerId, log: path.join(dir, name, '0.log') };
}

const files = (sub: string) => fs.readdirSync(path.join(dir, sub)).sort();

describe('ContainerLogManager', () => {
  it('rotates a log at its maximum size: renames, reopens, compresses the older ones', async () => {
    const c = await container('app');
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 100, maxFiles: 5 });
    fs.writeFileSync(c.log, 'x'.repeat(99));
    await m.rotateLogs();
    expect(files('app')).toEqual(['0.log']);

    fs.appendFileSync(c.log, 'first\n');
    await m.rotateLogs();
    // Renamed with upstream's timestamp, and a new (empty) file from ReopenContainerLog.
    expect(files('app')).toEqual(['0.log', '0.log.20260102-030405']);
    expect(fs.statSync(c.log).size).toBe(0);
    expect(server.calls('ReopenContainerLog').length).toBe(1);

    clock.advance(1000);
    fs.writeFileSync(c.log, 'y'.repeat(100));
    await m.rotateLogs();
    // The previously rotated file is compressed only now, once it no longer is the newest.
    expect(files('app')).toEqual(['0.log', '0.log.20260102-030405.gz', '0.log.20260102-030406']);
    const gz = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'app', '0.log.20260102-030405.gz'))).toString();
    expect(gz).toBe(`${'x'.repeat(99)}first\n`);
  });

  it('keeps at most maxFiles files, removing the oldest first', async () => {
    const c = await container('app');
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 10, maxFiles: 3 });
    for (let i = 0; i < 5; i++) {
      fs.writeFileSync(c.log, `${i}`.repeat(10));
      await m.rotateLogs();
      clock.advance(1000);
    }
    expect(files('app')).toEqual(['0.log', '0.log.20260102-030408.gz', '0.log.20260102-030409']);
  });

  it("cleans up upstream's leftovers: temporary files and files already compressed", async () => {
    const c = await container('app');
    const d = path.join(dir, 'app');
    fs.writeFileSync(path.join(d, '0.log.20250101-000000'), 'a');
    fs.writeFileSync(path.join(d, '0.log.20250101-000000.gz'), zlib.gzipSync('a'));
    fs.writeFileSync(path.join(d, '0.log.20250101-000001.tmp'), 'partial');
    fs.writeFileSync(c.log, 'z'.repeat(20));
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 10 });
    await m.rotateLogs();
    expect(files('app')).toEqual(['0.log', '0.log.20250101-000000.gz', '0.log.20260102-030405']);
  });

  it('leaves stopped containers alone and recreates a missing log', async () => {
    const stopped = await container('stopped', false);
    fs.mkdirSync(path.dirname(stopped.log), { recursive: true });
    fs.writeFileSync(stopped.log, 'z'.repeat(20));
    const running = await container('running');
    fs.rmSync(running.log);
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 10 });
    await m.rotateLogs();
    expect(files('stopped')).toEqual(['0.log']);
    expect(files('running')).toEqual(['0.log']);
  });

  it('renames the log back when the runtime cannot reopen it', async () => {
    const c = await container('app');
    fs.writeFileSync(c.log, 'z'.repeat(20));
    server.failNext('ReopenContainerLog', 1, 'Unknown', 'no');
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 10 });
    await m.rotateLogs();
    expect(files('app')).toEqual(['0.log']);
    expect(fs.readFileSync(c.log, 'utf8')).toBe('z'.repeat(20));
  });

  it('runs every monitor interval on the clock, with several workers', async () => {
    const a = await container('a');
    const b = await container('b');
    const m = new ContainerLogManager({
      runtimeService: rs,
      clock,
      maxSizeBytes: 10,
      maxWorkers: 2,
      monitorIntervalMs: 3000,
    });
    m.start();
    fs.writeFileSync(a.log, 'z'.repeat(20));
    fs.writeFileSync(b.log, 'z'.repeat(20));
    clock.advance(2999);
    await new Promise((r) => setTimeout(r, 20));
    expect(files('a')).toEqual(['0.log']);
    clock.advance(1);
    for (let i = 0; i < 2000 && (files('a').length < 2 || files('b').length < 2); i++)
      await new Promise((r) => setTimeout(r, 5));
    await m.stop();
    expect(files('a')).toHaveLength(2);
    expect(files('b')).toHaveLength(2);
  });

  it("asks a container's status once for its log path, and again only for a new container", async () => {
    const a = await container('a');
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 10 });
    await m.rotateLogs();
    await m.rotateLogs();
    expect(server.calls('ContainerStatus').length).toBe(1);
    // The cached path is still the one rotated.
    fs.writeFileSync(a.log, 'z'.repeat(10));
    await m.rotateLogs();
    expect(files('a')).toEqual(['0.log', '0.log.20260102-030405']);
    expect(server.calls('ContainerStatus').length).toBe(1);
    await container('b');
    await m.rotateLogs();
    expect(server.calls('ContainerStatus').length).toBe(2);
  });

  it('a round reads each running container once, whatever the number of workers', async () => {
    const names = ['c1', 'c2', 'c3', 'c4', 'c5'];
    const logs: string[] = [];
    for (const n of names) logs.push((await container(n)).log);
    for (const l of logs) fs.writeFileSync(l, 'z'.repeat(20));
    const m = new ContainerLogManager({ runtimeService: rs, clock, maxSizeBytes: 10, maxWorkers: 2 });
    const before = server.calls('ContainerStatus').length;
    await m.rotateLogs();
    expect(server.calls('ContainerStatus').length - before).toBe(names.length);
    for (const n of names) expect(files(n)).toHaveLength(2);
  });

  it('refuses bad settings, naming them', () => {
    expect(() => new ContainerLogManager({ runtimeService: rs, clock, maxFiles: 1 })).toThrow(
      'invalid MaxFiles 1, must be > 1',
    );
    expect(() => new ContainerLogManager({ runtimeService: rs, clock, maxWorkers: 0 })).toThrow(
      /containerLogMaxWorkers/,
    );
  });
});
