import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Clock, Pod } from '@kubelet-kit/core';
import { noopLogger, RealClock } from '@kubelet-kit/core';
import { ContainerState } from '@kubelet-kit/cri';
import { getContainerLogs, type LogsRuntimeService } from '@kubelet-kit/kuberuntime';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeletServer } from '../src/server.js';
import { decodePodLogOptions } from '../src/server-logs.js';

let server: KubeletServer | undefined;
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-server-logs-'));
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

const line = (sec: number, text: string, stream = 'stdout') =>
  `2016-10-06T00:17:${String(sec).padStart(2, '0')}.669794202Z ${stream} F ${text}\n`;

function pod(status: Pod['status']): Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status,
  };
}

/** A server whose pod `web` has container `app` now `c2` (running) and before `c1` (exited). */
async function start(status: Pod['status'], running = { value: false }) {
  fs.writeFileSync(path.join(dir, '0.log'), line(9, 'old1') + line(10, 'old2'));
  fs.writeFileSync(path.join(dir, '1.log'), line(9, 'new1') + line(10, 'new2', 'stderr') + line(11, 'new3'));
  const rs: LogsRuntimeService = {
    containerStatus: async ({ containerId }) =>
      ({
        status: {
          logPath: path.join(dir, containerId === 'c1' ? '0.log' : '1.log'),
          state:
            containerId === 'c2' && running.value
              ? ContainerState.CONTAINER_RUNNING
              : ContainerState.CONTAINER_EXITED,
        },
        info: {},
      }) as never,
  };
  // A fixed now (for sinceSeconds) with real timers: a follow's force check is a real short poll
  // here, over real sockets and files.
  const real = new RealClock();
  const now = Date.UTC(2016, 9, 6, 0, 17, 12);
  const clock: Clock = {
    now: () => now,
    since: (t) => now - t,
    setTimeout: (cb, ms) => real.setTimeout(cb, ms),
    setInterval: (cb, ms) => real.setInterval(cb, ms),
    sleep: (ms, signal) => real.sleep(ms, signal),
  };
  server = new KubeletServer({
    port: 0,
    pods: () => [],
    healthChecks: [],
    registry: new Registry(),
    logger: noopLogger,
    containerLogs: {
      getPodByName: (ns, name) => (ns === 'default' && name === 'web' ? pod(status) : undefined),
      getContainerLogs: (id, opts, out, err, signal) =>
        getContainerLogs(rs, id, opts, out, err, { clock, signal, forceCheckPeriodMs: 10 }),
    },
  });
  const addr = await server.start();
  return `http://127.0.0.1:${addr.port}/containerLogs`;
}

const restarted: Pod['status'] = {
  containerStatuses: [
    {
      name: 'app',
      image: 'busybox',
      imageID: '',
      ready: true,
      restartCount: 1,
      containerID: 'containerd://c2',
      state: { running: { startedAt: '2016-10-06T00:17:09Z' } },
      lastState: { terminated: { exitCode: 1, containerID: 'containerd://c1' } },
    },
  ],
};

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

describe('/containerLogs', () => {
  it('streams the current instance, with the query options', async () => {
    const base = await start(restarted);
    expect(await get(`${base}/default/web/app`)).toEqual({ status: 200, body: 'new1\nnew2\nnew3\n' });
    expect((await get(`${base}/default/web/app?tailLines=1`)).body).toBe('new3\n');
    expect((await get(`${base}/default/web/app?tail=all`)).body).toBe('new1\nnew2\nnew3\n');
    expect((await get(`${base}/default/web/app?limitBytes=7`)).body).toBe('new1\nne');
    expect((await get(`${base}/default/web/app?sinceSeconds=2`)).body).toBe('new2\nnew3\n');
    expect((await get(`${base}/default/web/app?sinceTime=2016-10-06T00:17:11Z`)).body).toBe('new3\n');
    expect((await get(`${base}/default/web/app?timestamps=true&tailLines=1`)).body).toBe(
      '2016-10-06T00:17:11.669794202Z new3\n',
    );
  });

  it('streams the previous instance with previous=true', async () => {
    const base = await start(restarted);
    expect(await get(`${base}/default/web/app?previous=true`)).toEqual({ status: 200, body: 'old1\nold2\n' });
  });

  it("says so when there is no previous instance, with upstream's text", async () => {
    const base = await start({
      containerStatuses: [{ ...restarted.containerStatuses![0]!, lastState: {} }],
    });
    expect(await get(`${base}/default/web/app?previous=true`)).toEqual({
      status: 400,
      body: 'previous terminated container "app" in pod "web" not found',
    });
  });

  it('refuses unknown pods and containers with 404', async () => {
    const base = await start(restarted);
    expect(await get(`${base}/default/nope/app`)).toEqual({ status: 404, body: 'pod "nope" does not exist' });
    expect(await get(`${base}/default/web/nope`)).toEqual({
      status: 404,
      body: 'container "nope" not found in pod "web"',
    });
  });

  it('reports a waiting container as upstream', async () => {
    const base = await start({
      containerStatuses: [
        {
          name: 'app',
          image: 'busybox',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ImagePullBackOff' } },
        },
      ],
    });
    expect(await get(`${base}/default/web/app`)).toEqual({
      status: 400,
      body: 'container "app" in pod "web" is waiting to start: trying and failing to pull image',
    });
  });

  it('refuses undecodable (400) and invalid (422) options', async () => {
    const base = await start(restarted);
    expect(await get(`${base}/default/web/app?tailLines=x`)).toEqual({
      status: 400,
      body: '{"message": "Unable to decode query."}',
    });
    expect((await get(`${base}/default/web/app?sinceTime=yesterday`)).status).toBe(400);
    for (const q of [
      'tailLines=-1',
      'limitBytes=0',
      'sinceSeconds=0',
      'sinceSeconds=1&sinceTime=2016-10-06T00:17:11Z',
    ]) {
      expect(await get(`${base}/default/web/app?${q}`)).toEqual({
        status: 422,
        body: '{"message": "Invalid request."}',
      });
    }
    expect((await get(`${base}/default/web/`)).body).toBe('{"message": "Missing container name."}');
  });

  it('follows a running container until it stops', async () => {
    const running = { value: true };
    const base = await start(restarted, running);
    const res = await fetch(`${base}/default/web/app?follow=true`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (text !== 'new1\nnew2\nnew3\n') text += Buffer.from((await reader.read()).value!).toString();
    fs.appendFileSync(path.join(dir, '1.log'), line(12, 'new4'));
    while (text !== 'new1\nnew2\nnew3\nnew4\n') text += Buffer.from((await reader.read()).value!).toString();
    running.value = false;
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      text += Buffer.from(r.value).toString();
    }
    expect(text).toBe('new1\nnew2\nnew3\nnew4\n');
  });
});

describe('decodePodLogOptions', () => {
  it("converts booleans as upstream's query codec", () => {
    expect(decodePodLogOptions(new URLSearchParams('follow=true&previous=0&timestamps=no'))).toEqual({
      follow: true,
      previous: false,
      timestamps: false,
    });
    expect(decodePodLogOptions(new URLSearchParams('sinceTime=2016-10-06T00:17:11Z'))).toEqual({
      sinceTime: Date.UTC(2016, 9, 6, 0, 17, 11),
    });
  });
});
