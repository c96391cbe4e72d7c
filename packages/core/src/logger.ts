/** A log method in pino's shape: `log('msg')` or `log({ key: value }, 'msg')`. @public */
export interface LogFn {
  (message: string): void;
  (fields: Readonly<Record<string, unknown>>, message?: string): void;
}

/** The logger every package takes: a subset of pino's, so a pino logger can be passed as is. @public */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  /** A logger that adds `bindings` to every line. */
  child(bindings: Readonly<Record<string, unknown>>): Logger;
}

const noop: LogFn = () => {};

/** A logger that drops everything: the default when a caller passes none. @public */
export const noopLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => noopLogger,
};
