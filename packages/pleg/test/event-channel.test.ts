import { EventChannel } from '@kubelet-kit/pleg';
import { describe, expect, it } from 'vitest';

describe('EventChannel', () => {
  it('buffers up to its capacity and refuses more', () => {
    const ch = new EventChannel<number>(2);
    expect([ch.trySend(1), ch.trySend(2), ch.trySend(3)]).toEqual([true, true, false]);
    expect(ch.length).toBe(2);
    expect([ch.tryReceive(), ch.tryReceive(), ch.tryReceive()]).toEqual([1, 2, undefined]);
  });

  it('hands a value straight to a waiting receiver, even at capacity 0', async () => {
    const ch = new EventChannel<string>(0);
    expect(ch.trySend('lost')).toBe(false);
    const r = ch.receive();
    expect(ch.trySend('a')).toBe(true);
    await expect(r).resolves.toBe('a');
  });

  it('close ends receivers and iteration after the buffer drains', async () => {
    const ch = new EventChannel<number>(10);
    ch.trySend(1);
    ch.trySend(2);
    ch.close();
    expect(ch.trySend(3)).toBe(false);
    const got: number[] = [];
    for await (const v of ch) got.push(v);
    expect(got).toEqual([1, 2]);
    await expect(ch.receive()).resolves.toBeUndefined();
  });

  it('an aborted receive rejects and does not swallow the next value', async () => {
    const ch = new EventChannel<number>(10);
    const abort = new AbortController();
    const r = ch.receive(abort.signal);
    abort.abort(new Error('stop'));
    await expect(r).rejects.toThrow('stop');
    ch.trySend(7);
    expect(ch.tryReceive()).toBe(7);
  });
});
