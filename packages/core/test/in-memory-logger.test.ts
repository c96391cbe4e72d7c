import { describe, expect, it } from 'vitest';
import { InMemoryLogger } from '../src/testing/index.js';

describe('InMemoryLogger', () => {
  it('keeps lines with child bindings', () => {
    const log = new InMemoryLogger();
    log.child({ pod: 'web' }).info({ n: 1 }, 'hello');
    log.warn('plain');
    expect(log.records).toEqual([
      { level: 'info', message: 'hello', fields: { pod: 'web', n: 1 } },
      { level: 'warn', message: 'plain', fields: {} },
    ]);
  });
});

describe('InMemoryLogger levels', () => {
  it('records every level, a message-less fields call as an empty message', () => {
    const log = new InMemoryLogger({ component: 'x' });
    log.debug('d');
    log.info({ a: 1 });
    log.error({ component: 'override' }, 'e');
    expect(log.records).toEqual([
      { level: 'debug', message: 'd', fields: { component: 'x' } },
      { level: 'info', message: '', fields: { component: 'x', a: 1 } },
      { level: 'error', message: 'e', fields: { component: 'override' } },
    ]);
  });

  it('a child shares its parent’s records, and grandchildren add their bindings', () => {
    const log = new InMemoryLogger();
    log.child({ a: 1 }).child({ b: 2 }).warn('w');
    expect(log.records).toEqual([{ level: 'warn', message: 'w', fields: { a: 1, b: 2 } }]);
  });
});
