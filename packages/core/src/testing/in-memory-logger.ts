import type { LogFn, Logger } from '@kubelet-kit/core';

/** One line captured by {@link InMemoryLogger}. @public */
export interface LogRecord {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** A logger that keeps its lines in memory, for tests that assert on what was logged. @public */
export class InMemoryLogger implements Logger {
  readonly records: LogRecord[];
  readonly #bindings: Readonly<Record<string, unknown>>;

  constructor(bindings: Readonly<Record<string, unknown>> = {}, records: LogRecord[] = []) {
    this.#bindings = bindings;
    this.records = records;
  }

  readonly debug: LogFn = (a: string | Readonly<Record<string, unknown>>, m?: string) =>
    this.#log('debug', a, m);
  readonly info: LogFn = (a: string | Readonly<Record<string, unknown>>, m?: string) =>
    this.#log('info', a, m);
  readonly warn: LogFn = (a: string | Readonly<Record<string, unknown>>, m?: string) =>
    this.#log('warn', a, m);
  readonly error: LogFn = (a: string | Readonly<Record<string, unknown>>, m?: string) =>
    this.#log('error', a, m);

  child(bindings: Readonly<Record<string, unknown>>): Logger {
    return new InMemoryLogger({ ...this.#bindings, ...bindings }, this.records);
  }

  #log(level: LogRecord['level'], a: string | Readonly<Record<string, unknown>>, m?: string): void {
    if (typeof a === 'string') this.records.push({ level, message: a, fields: { ...this.#bindings } });
    else this.records.push({ level, message: m ?? '', fields: { ...this.#bindings, ...a } });
  }
}
