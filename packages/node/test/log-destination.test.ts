import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lineBatchingDestination } from '../src/log-destination.js';

let dir: string;
let fd: number;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-log-'));
  fd = fs.openSync(path.join(dir, 'log'), 'a');
});
afterEach(() => {
  fs.closeSync(fd);
  fs.rmSync(dir, { recursive: true, force: true });
});
const written = () => fs.readFileSync(path.join(dir, 'log'), 'utf8');
const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('lineBatchingDestination', () => {
  it('writes the lines of one event-loop turn together at its end, in order', async () => {
    const logger = pino({ base: null, timestamp: false }, lineBatchingDestination(fd));
    logger.info('one');
    logger.info('two');
    expect(written()).toBe('');
    await endOfTurn();
    expect(
      written()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['one', 'two']);
    logger.warn('three');
    await endOfTurn();
    expect(written().trim().split('\n')).toHaveLength(3);
  });

  it('flushSync writes what waits at once', () => {
    const destination = lineBatchingDestination(fd);
    destination.write('{"msg":"now"}\n');
    destination.flushSync();
    expect(written()).toBe('{"msg":"now"}\n');
  });
});
