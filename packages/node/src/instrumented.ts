import type { KubeletMetrics } from './metrics.js';

const operationName = (method: string) => method.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Wraps a CRI client so that each call is counted and timed under upstream's runtime operation
 * metrics (`kubelet_runtime_operations_total`, `…_errors_total`, `…_duration_seconds`), like
 * upstream's instrumentedRuntimeService. Methods that do not return a promise pass through.
 */
export function instrumentCriClient<T extends object>(
  client: T,
  metrics: KubeletMetrics,
  now: () => number = Date.now,
): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      // Methods run on the real client, whose private fields a proxy cannot reach.
      if (typeof prop !== 'string' || prop === 'close' || prop === 'constructor') return value.bind(target);
      const operation = operationName(prop);
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        const start = now();
        metrics.runtimeOperations.inc({ operation_type: operation });
        return result.then(
          (v: unknown) => {
            metrics.runtimeOperationsDuration.observe({ operation_type: operation }, (now() - start) / 1000);
            return v;
          },
          (err: unknown) => {
            metrics.runtimeOperationsDuration.observe({ operation_type: operation }, (now() - start) / 1000);
            metrics.runtimeOperationsErrors.inc({ operation_type: operation });
            throw err;
          },
        );
      };
    },
  });
}
