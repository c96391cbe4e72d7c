import { noopLogger } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder, InMemoryLogger } from '@kubelet-kit/core/testing';
import { PodConfig, type PodSource, type PodSourceSink } from '@kubelet-kit/pod-config';
import { describe, expect, it } from 'vitest';
import { createPodSources, podConfigView, sourceErrorLog } from '../src/pod-sources.js';

const base = {
  nodeName: 'node-a',
  clock: new FakeClock(),
  logger: noopLogger,
  recorder: new InMemoryEventRecorder(),
  onError: () => {},
};

/** A source that sends one SET when started and records its stop. */
function fakeSource(name: string, events: string[]): PodSource {
  return {
    name,
    async start(sink: PodSourceSink) {
      events.push(`start ${name}`);
      await sink({ op: 'SET', pods: [], source: name });
    },
    async stop() {
      events.push(`stop ${name}`);
    },
  };
}

describe('createPodSources', () => {
  it('has no source without flags', () => {
    expect(createPodSources(base)).toEqual([]);
  });

  it("orders the sources as upstream (file, URL, API server), the embedder's last", () => {
    const events: string[] = [];
    const sources = createPodSources({
      ...base,
      podManifestPath: '/nonexistent/manifests',
      manifestUrl: 'http://127.0.0.1:1/pods',
      apiserverSource: fakeSource('api', events),
      sources: [fakeSource('own', events)],
    });
    expect(sources.map((s) => s.name)).toEqual(['file', 'http', 'api', 'own']);
  });
});

describe('podConfigView', () => {
  it('adds the sources when started, and has seen all of them once each sent its SET', async () => {
    const events: string[] = [];
    const podConfig = new PodConfig({ clock: new FakeClock() });
    const view = podConfigView(podConfig, [fakeSource('a', events), fakeSource('b', events)]);
    expect(events).toEqual([]);
    await view.start();
    expect(events).toEqual(['start a', 'start b']);
    expect(view.seenAllSources()).toBe(true);
    await view.stop();
    expect(events).toEqual(['start a', 'start b', 'stop a', 'stop b']);
  });

  it('has not seen all sources while one has sent nothing', async () => {
    const silent: PodSource = { name: 'silent', start() {}, async stop() {} };
    const view = podConfigView(new PodConfig({ clock: new FakeClock() }), [fakeSource('a', []), silent]);
    await view.start();
    expect(view.seenAllSources()).toBe(false);
    await view.stop();
  });
});

describe('sourceErrorLog', () => {
  it('keeps the newest messages (bounded), logs each and hands it on', () => {
    const logger = new InMemoryLogger();
    const handed: Error[] = [];
    const log = sourceErrorLog(logger, (e) => handed.push(e), 2);
    for (const m of ['one', 'two', 'three']) log.onError(new Error(m));
    expect(log.errors).toEqual(['two', 'three']);
    expect(handed.map((e) => e.message)).toEqual(['one', 'two', 'three']);
    expect(logger.records.map((r) => [r.level, r.message, r.fields.err])).toEqual([
      ['warn', 'pod source error', 'one'],
      ['warn', 'pod source error', 'two'],
      ['warn', 'pod source error', 'three'],
    ]);
  });
});
