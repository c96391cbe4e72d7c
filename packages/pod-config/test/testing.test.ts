import { FakePodSource } from '@kubelet-kit/pod-config/testing';
import { describe, expect, it } from 'vitest';
import { PodConfig } from '../src/index.js';

describe('FakePodSource', () => {
  it('delivers updates sent before start at start, then the rest as sent', async () => {
    const config = new PodConfig({ bufferUpdates: false });
    const ops: string[] = [];
    config.on('update', (u) => ops.push(`${u.op}:${u.pods.length}`));
    const source = new FakePodSource('fake');
    await source.set([{ metadata: { uid: 'a', name: 'a', namespace: 'ns' } }]);
    expect(ops).toEqual([]);
    await config.addSource(source);
    expect(ops).toEqual(['ADD:1']);
    await source.send('REMOVE', [{ metadata: { uid: 'a' } }]);
    expect(ops).toEqual(['ADD:1', 'REMOVE:1']);
    expect(config.seenAllSources(['fake'])).toBe(true);
    await config.stop();
    expect(source.stopped).toBe(true);
    expect(source.sent.map((u) => u.op)).toEqual(['SET', 'REMOVE']);
  });
});
