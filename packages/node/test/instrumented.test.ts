import { describe, expect, it } from 'vitest';
import { instrumentCriClient } from '../src/instrumented.js';
import { KubeletMetrics } from '../src/metrics.js';

class FakeClient {
  readonly #secret = 'private';
  calls = 0;
  async listPodSandbox(): Promise<string> {
    this.calls++;
    return this.#secret;
  }
  async startContainer(): Promise<void> {
    throw new Error('boom');
  }
  endpoint(): string {
    return this.#secret;
  }
}

async function series(metrics: KubeletMetrics, name: string) {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return new Map(
    (metric?.values ?? []).map((v) => [
      `${String(v.labels.operation_type)}${v.labels.le !== undefined ? `/${v.labels.le}` : ''}`,
      v.value,
    ]),
  );
}

describe('instrumentCriClient', () => {
  it('counts every call and every error under upstream operation names, and times them', async () => {
    const metrics = new KubeletMetrics();
    let t = 1000;
    const client = instrumentCriClient(new FakeClient(), metrics, () => {
      t += 250;
      return t;
    });
    await expect(client.listPodSandbox()).resolves.toBe('private');
    await client.listPodSandbox();
    await expect(client.startContainer()).rejects.toThrow('boom');
    const totals = await series(metrics, 'kubelet_runtime_operations_total');
    expect(totals.get('list_pod_sandbox')).toBe(2);
    expect(totals.get('start_container')).toBe(1);
    const errors = await series(metrics, 'kubelet_runtime_operations_errors_total');
    expect(errors.get('start_container')).toBe(1);
    expect(errors.get('list_pod_sandbox') ?? 0).toBe(0);
    const durations = await series(metrics, 'kubelet_runtime_operations_duration_seconds');
    // Each call took 250 ms on the injected clock: above upstream's 0.1953125 s bucket (5 ms
    // times 2.5^4), within the next one.
    expect(durations.get('list_pod_sandbox/0.48828125')).toBe(2);
    expect(durations.get('list_pod_sandbox/0.1953125')).toBe(0);
  });

  it('passes methods that return no promise straight through, on the real object', () => {
    const metrics = new KubeletMetrics();
    const inner = new FakeClient();
    const client = instrumentCriClient(inner, metrics);
    expect(client.endpoint()).toBe('private');
    expect(client.calls).toBe(0);
  });
});
