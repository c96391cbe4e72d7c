import type { KubeletMetrics } from './metrics.js';

const operationName = (method: string) => method.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Wraps a CRI client so that each call is counted and timed under upstream's runtime operation
 * metrics (`kubelet_runtime_operations_total`, `…_errors_total`, `…_duration_seconds`), like
 * upstream's instrumentedRuntimeService. Methods that do not return a promise pass through.
 * Each method's wrapper and labelled series are made once, on its first use.
 */
export function instrumentCriClient<T extends object>(
  client: T,
  metrics: KubeletMetrics,
  now: () => number = Date.now,
): T {
  const wrappers = new Map<string, unknown>();
  const wrap = (method: (...a: unknown[]) => unknown, operation: string) => {
    const labels = { operation_type: operation };
    const total = metrics.runtimeOperations.labels(labels);
    const errors = metrics.runtimeOperationsErrors.labels(labels);
    const duration = metrics.runtimeOperationsDuration.labels(labels);
    return (...args: unknown[]) => {
      const result: unknown = method.apply(client, args);
      if (!(result instanceof Promise)) return result;
      const start = now();
      total.inc();
      return result.then(
        (v: unknown) => {
          duration.observe((now() - start) / 1000);
          return v;
        },
        (err: unknown) => {
          duration.observe((now() - start) / 1000);
          errors.inc();
          throw err;
        },
      );
    };
  };
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      // Methods run on the real client, whose private fields a proxy cannot reach.
      if (typeof prop !== 'string' || prop === 'close' || prop === 'constructor') return value.bind(target);
      let wrapper = wrappers.get(prop);
      if (!wrapper) {
        wrapper = wrap(value as (...a: unknown[]) => unknown, operationName(prop));
        wrappers.set(prop, wrapper);
      }
      return wrapper;
    },
  });
}
