import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MountedVolume, Pod } from '@kubelet-kit/core';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { Counter, Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kubeletConfigz } from '../src/configz.js';
import { runningPodsToApi } from '../src/running-pods.js';
import { KubeletServer } from '../src/server.js';
import type { StatsHandlers } from '../src/server-stats.js';
import { CpuUsageCache } from '../src/stats/cpu-usage-cache.js';
import { diskUsage } from '../src/stats/fs-usage.js';
import { createSummaryProvider, type SummaryProvider } from '../src/stats/index.js';
import { goFloat, renderResourceMetrics } from '../src/stats/resource-metrics.js';
import type { Summary } from '../src/stats/summary-types.js';

const image = 'localhost/kubelet-kit/busybox:1.0';
const t0 = Date.UTC(2026, 5, 1, 12, 0, 0);

// A /proc of our own, so node figures are known.
function writeProc(dir: string, busyTicks: number): void {
  fs.mkdirSync(path.join(dir, 'net'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'sys/kernel'), { recursive: true });
  // user nice system idle iowait irq softirq steal
  fs.writeFileSync(
    path.join(dir, 'stat'),
    `cpu  ${busyTicks} 0 0 5000 7 0 0 0 0 0\ncpu0 ${busyTicks} 0 0 5000 7 0 0 0 0 0\nbtime 1780000000\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'meminfo'),
    'MemTotal:        4000000 kB\nMemFree:         1000000 kB\nInactive(file):   500000 kB\nAnonPages:       700000 kB\n',
  );
  fs.writeFileSync(path.join(dir, 'vmstat'), 'pgfault 1234\npgmajfault 56\n');
  fs.writeFileSync(
    path.join(dir, 'net/dev'),
    'Inter-|   Receive\n face |bytes packets errs drop fifo frame compressed multicast|bytes\n' +
      '    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n' +
      '  eth0: 9000 10 2 0 0 0 0 0 7000 9 1 0 0 0 0 0\n',
  );
  fs.writeFileSync(path.join(dir, 'net/route'), 'Iface\tDestination\tGateway\n eth0\t00000000\t0101A8C0\n');
  fs.writeFileSync(path.join(dir, 'sys/kernel/pid_max'), '4194304\n');
  fs.writeFileSync(path.join(dir, 'loadavg'), '0.10 0.20 0.30 2/345 6789\n');
}

describe('summary API over the in-memory CRI', () => {
  let clock: FakeClock;
  let cri: InMemoryCriServer;
  let rs: RuntimeServiceClient;
  let is: ImageServiceClient;
  let dir: string;
  let pods: Pod[];
  let volumes: Map<string, Map<string, MountedVolume>>;
  let provider: SummaryProvider;

  beforeEach(async () => {
    clock = new FakeClock(t0);
    cri = await InMemoryCriServer.start({ images: [image], clock });
    rs = new RuntimeServiceClient({ endpoint: cri.endpoint });
    is = new ImageServiceClient({ endpoint: cri.endpoint });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-stats-'));
    writeProc(path.join(dir, 'proc'), 1000);
    pods = [];
    volumes = new Map();
    provider = createSummaryProvider({
      nodeName: 'node1',
      rootDirectory: dir,
      podLogsDirectory: path.join(dir, 'logs'),
      runtimeService: rs,
      imageService: is,
      getPods: () => pods,
      getMountedVolumesForPod: (uid) => volumes.get(uid) ?? new Map(),
      clock,
      logger: noopLogger,
      procRoot: path.join(dir, 'proc'),
      self: () => ({ cpuMicros: 2_000_000, rssBytes: 50 << 20 }),
    });
  });

  afterEach(async () => {
    rs.close();
    is.close();
    await cri.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function runPod(name: string, uid: string, containers: readonly string[]) {
    const labels = {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': uid,
    };
    const { podSandboxId } = await rs.runPodSandbox({
      config: { metadata: { name, namespace: 'default', uid, attempt: 0 }, labels },
    });
    const ids: string[] = [];
    for (const c of containers) {
      const { containerId } = await rs.createContainer({
        podSandboxId,
        config: {
          metadata: { name: c, attempt: 0 },
          image: { image },
          labels: { ...labels, 'io.kubernetes.container.name': c },
        },
      });
      await rs.startContainer({ containerId });
      ids.push(containerId);
    }
    return { podSandboxId, ids };
  }

  it('computes usageNanoCores from two samples of the cumulative counter', async () => {
    const { ids } = await runPod('web', 'uid-web', ['app']);
    const app = ids[0] ?? '';
    cri.setContainerUsage(app, { cpuUsageCoreNanoSeconds: 1e9, memoryWorkingSetBytes: 20 << 20 });
    const first = await provider.get();
    const c1 = first.pods[0]?.containers[0];
    expect(c1?.cpu?.usageCoreNanoSeconds).toBe(1e9);
    expect(c1?.cpu?.usageNanoCores).toBeUndefined();

    // 10 s later, 2.5 s more CPU: a quarter of a core.
    clock.advance(10_000);
    cri.setContainerUsage(app, { cpuUsageCoreNanoSeconds: 3.5e9, memoryWorkingSetBytes: 24 << 20 });
    writeProc(path.join(dir, 'proc'), 1500); // +500 ticks = 5 s of CPU in 10 s
    const second = await provider.get();
    const pod = second.pods[0];
    expect(pod?.containers[0]?.cpu?.usageNanoCores).toBe(250_000_000);
    expect(pod?.cpu?.usageNanoCores).toBe(250_000_000);
    expect(pod?.containers[0]?.memory?.workingSetBytes).toBe(24 << 20);
    expect(pod?.memory?.workingSetBytes).toBe(24 << 20);
    expect(second.node.cpu?.usageNanoCores).toBe(500_000_000);
    expect(second.node.cpu?.usageCoreNanoSeconds).toBe(15e9);
  });

  it('does not move the CPU samples for only_cpu_and_memory (the resource metrics path)', async () => {
    const { ids } = await runPod('web', 'uid-web', ['app']);
    const app = ids[0] ?? '';
    cri.setContainerUsage(app, { cpuUsageCoreNanoSeconds: 1e9 });
    await provider.get();
    clock.advance(10_000);
    cri.setContainerUsage(app, { cpuUsageCoreNanoSeconds: 2e9 });
    const cm = await provider.getCPUAndMemoryStats();
    expect(cm.pods[0]?.containers[0]?.cpu?.usageNanoCores).toBe(100_000_000);
    expect(cm.pods[0]?.volume).toBeUndefined();
    expect(cm.pods[0]?.['ephemeral-storage']).toBeUndefined();
    expect(cm.node.fs).toBeUndefined();
    clock.advance(10_000);
    cri.setContainerUsage(app, { cpuUsageCoreNanoSeconds: 3e9 });
    // Still against the summary's sample: 2 s over 20 s.
    const full = await provider.get();
    expect(full.pods[0]?.containers[0]?.cpu?.usageNanoCores).toBe(100_000_000);
  });

  it('leaves usageNanoCores out when the counter goes back (a restarted container)', () => {
    const cache = new CpuUsageCache(clock);
    expect(cache.usageNanoCores('c', 1e9, 5e9, true)).toBeUndefined();
    expect(cache.usageNanoCores('c', 2e9, 1e9, true)).toBeUndefined();
    expect(cache.usageNanoCores('c', 3e9, 1.5e9, true)).toBe(500_000_000);
    expect(cache.usageNanoCores('c', 3e9, 2e9, true)).toBeUndefined(); // no time passed
    clock.advance(11 * 60_000);
    cache.cleanup();
    expect(cache.size).toBe(0);
  });

  it('fills the node section from /proc, statfs and the image filesystem', async () => {
    const s = await provider.get();
    const n = s.node;
    expect(n.nodeName).toBe('node1');
    expect(n.startTime).toBe(new Date(1780000000 * 1000).toISOString().replace('.000', ''));
    expect(n.memory).toMatchObject({
      usageBytes: 3_000_000 * 1024,
      workingSetBytes: 2_500_000 * 1024,
      availableBytes: 1_500_000 * 1024,
      rssBytes: 700_000 * 1024,
      pageFaults: 1234,
      majorPageFaults: 56,
    });
    expect(n.network).toMatchObject({ name: 'eth0', rxBytes: 9000, rxErrors: 2, txBytes: 7000, txErrors: 1 });
    expect(n.network?.interfaces?.map((i) => i.name)).toEqual(['eth0']);
    expect(n.rlimit).toMatchObject({ maxpid: 4194304, curproc: 345 });
    expect(n.fs?.capacityBytes).toBeGreaterThan(0);
    expect(n.runtime?.imageFs?.inodesUsed).toBe(1);
    expect(n.runtime?.containerFs).toEqual(n.runtime?.imageFs);
    expect(n.systemContainers?.map((c) => c.name)).toEqual(['kubelet', 'pods']);
    expect(n.systemContainers?.[0]?.memory?.workingSetBytes).toBe(50 << 20);
  });

  it('getNodeOnly has the node section without pods, and asks the runtime for no pod stats', async () => {
    await runPod('web', 'uid-web', ['app']);
    const before = cri.calls('ListContainerStats').length + cri.calls('ListPodSandboxStats').length;
    const s = await provider.getNodeOnly();
    expect(s.pods).toEqual([]);
    expect(s.node.memory?.availableBytes).toBe(1_500_000 * 1024);
    expect(s.node.fs?.capacityBytes).toBeGreaterThan(0);
    expect(s.node.runtime?.imageFs?.inodesUsed).toBe(1);
    expect(s.node.rlimit).toMatchObject({ maxpid: 4194304, curproc: 345 });
    expect(s.node.systemContainers?.map((c) => c.name)).toEqual(['kubelet']);
    expect(cri.calls('ListContainerStats').length + cri.calls('ListPodSandboxStats').length).toBe(before);
    expect((await provider.get()).pods.map((p) => p.podRef.name)).toEqual(['web']);
    expect(cri.calls('ListContainerStats').length + cri.calls('ListPodSandboxStats').length).toBeGreaterThan(
      before,
    );
  });

  it('reports volumes from the volume manager, emptyDir usage by a du-like walk', async () => {
    await runPod('web', 'uid-web', ['app']);
    const emptyDir = path.join(dir, 'pods/uid-web/volumes/kubernetes.io~empty-dir/cache');
    const host = path.join(dir, 'host');
    fs.mkdirSync(emptyDir, { recursive: true });
    fs.mkdirSync(host, { recursive: true });
    pods.push({
      metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
      spec: {
        containers: [{ name: 'app', image }],
        volumes: [
          { name: 'cache', emptyDir: {} },
          { name: 'host', hostPath: { path: host } },
        ],
      },
    });
    volumes.set(
      'uid-web',
      new Map([
        ['cache', { hostPath: emptyDir, readOnly: false }],
        ['host', { hostPath: host, readOnly: false }],
      ]),
    );
    const before = (await provider.get()).pods[0]?.volume;
    expect(before?.map((v) => v.name)).toEqual(['cache']); // hostPath has no metrics upstream
    fs.writeFileSync(path.join(emptyDir, 'blob'), Buffer.alloc(1 << 20, 1));
    fs.linkSync(path.join(emptyDir, 'blob'), path.join(emptyDir, 'hardlink'));
    const after = (await provider.get()).pods[0];
    const cache = after?.volume?.[0];
    expect((cache?.usedBytes ?? 0) - (before?.[0]?.usedBytes ?? 0)).toBeGreaterThanOrEqual(1 << 20);
    expect((cache?.usedBytes ?? 0) - (before?.[0]?.usedBytes ?? 0)).toBeLessThan(2 << 20); // hard link once
    expect(cache?.inodesUsed).toBe(2);
    expect(cache?.capacityBytes).toBeGreaterThan(0);
    expect(after?.['ephemeral-storage']?.usedBytes).toBeGreaterThanOrEqual(1 << 20);
  });

  it('measures container logs and writable layers; ephemeral storage sums them', async () => {
    const { ids } = await runPod('web', 'uid-web', ['app']);
    cri.setContainerUsage(ids[0] ?? '', { writableLayerBytes: 4096, writableLayerInodes: 3 });
    const logDir = path.join(dir, 'logs/default_web_uid-web/app');
    fs.mkdirSync(logDir, { recursive: true });
    fs.writeFileSync(path.join(logDir, '0.log'), Buffer.alloc(64 * 1024, 1));
    const pod = (await provider.get()).pods[0];
    const c = pod?.containers[0];
    expect(c?.rootfs).toMatchObject({ usedBytes: 4096, inodesUsed: 3 });
    expect(c?.logs?.usedBytes).toBeGreaterThanOrEqual(64 * 1024);
    expect(c?.logs?.inodesUsed).toBe(2);
    expect(pod?.['ephemeral-storage']?.usedBytes).toBe(4096 + (c?.logs?.usedBytes ?? 0));
    expect(pod?.process_stats?.process_count).toBe(1);
  });

  it('falls back to ListContainerStats summed per sandbox when ListPodSandboxStats is unimplemented', async () => {
    const { ids } = await runPod('web', 'uid-web', ['a', 'b']);
    cri.setContainerUsage(ids[0] ?? '', { cpuUsageCoreNanoSeconds: 1e9, memoryWorkingSetBytes: 100 });
    cri.setContainerUsage(ids[1] ?? '', { cpuUsageCoreNanoSeconds: 2e9, memoryWorkingSetBytes: 200 });
    cri.failNext('ListPodSandboxStats', 1, 'Unimplemented', 'unknown method ListPodSandboxStats');
    const s = await provider.get();
    expect(s.pods[0]?.containers.map((c) => c.name)).toEqual(['a', 'b']);
    expect(s.pods[0]?.cpu?.usageCoreNanoSeconds).toBe(3e9);
    expect(s.pods[0]?.memory?.workingSetBytes).toBe(300);
    // And it does not ask again.
    await provider.get();
    expect(cri.calls().filter((c) => c.method === 'ListPodSandboxStats')).toHaveLength(1);
  });

  it('sums ListContainerStats for a call whose ListPodSandboxStats fails (containerd 1.6 without pod cgroups)', async () => {
    const { ids } = await runPod('web', 'uid-web', ['a']);
    cri.setContainerUsage(ids[0] ?? '', { memoryWorkingSetBytes: 100 });
    cri.failNext(
      'ListPodSandboxStats',
      1,
      'Unknown',
      'failed to get cgroup metrics because cgroupPath is empty',
    );
    expect((await provider.get()).pods[0]?.memory?.workingSetBytes).toBe(100);
    // The next call asks again, and gets the sandbox's figures.
    expect((await provider.get()).pods[0]?.process_stats?.process_count).toBe(1);
  });

  it('lists only ready sandboxes and running containers', async () => {
    const web = await runPod('web', 'uid-web', ['app']);
    await runPod('db', 'uid-db', ['pg']);
    await rs.stopPodSandbox({ podSandboxId: web.podSandboxId });
    const s = await provider.get();
    expect(s.pods.map((p) => p.podRef)).toEqual([{ name: 'db', namespace: 'default', uid: 'uid-db' }]);
  });

  it('serves the endpoints through the kubelet server', async () => {
    const { ids } = await runPod('web', 'uid-web', ['app']);
    cri.setContainerUsage(ids[0] ?? '', { cpuUsageCoreNanoSeconds: 1.5e9, memoryWorkingSetBytes: 36700160 });
    const registry = new Registry();
    const probes = new Counter({
      name: 'prober_probe_total',
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace'],
      registers: [registry],
    });
    probes.inc({
      probe_type: 'Liveness',
      result: 'successful',
      container: 'app',
      pod: 'web',
      namespace: 'default',
    });
    new Counter({ name: 'kubelet_other_total', help: 'other', registers: [registry] }).inc();
    const handlers: StatsHandlers = {
      summary: () => provider.get(),
      cpuAndMemory: () => provider.getCPUAndMemoryStats(),
      runningPods: async () =>
        runningPodsToApi([
          {
            id: 'uid-web',
            name: 'web',
            namespace: 'default',
            createdAt: t0,
            containers: [
              {
                id: { type: 'containerd', id: 'c1' },
                name: 'app',
                image,
                imageId: '',
                hash: '',
                state: 'running',
              },
            ],
            sandboxes: [],
          },
        ]),
      configz: () =>
        kubeletConfigz(
          { runtimeEndpoint: 'unix:///run/cri.sock', maxPods: 20, syncFrequencyMs: 90_000 },
          {
            rootDirectory: dir,
            podLogsDirectory: '/var/log/pods',
            port: 10250,
          },
        ),
      probeRegistry: registry,
      logger: noopLogger,
    };
    const server = new KubeletServer({
      port: 0,
      pods: () => [],
      healthChecks: [],
      registry,
      logger: noopLogger,
      stats: handlers,
    });
    const { port } = await server.start();
    const base = `http://127.0.0.1:${port}`;
    try {
      const summary = (await (await fetch(`${base}/stats/summary`)).json()) as Summary;
      expect(summary.pods[0]?.podRef.name).toBe('web');
      expect(summary.node.fs).toBeDefined();

      const only = (await (await fetch(`${base}/stats/summary?only_cpu_and_memory=true`)).json()) as Summary;
      expect(only.node.fs).toBeUndefined();
      expect(only.pods[0]?.containers[0]?.memory?.workingSetBytes).toBe(36700160);

      const posted = await fetch(`${base}/stats/summary`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'only_cpu_and_memory=true',
      });
      expect(((await posted.json()) as Summary).node.fs).toBeUndefined();
      expect((await fetch(`${base}/stats/summary?only_cpu_and_memory=maybe`)).status).toBe(500);
      expect((await fetch(`${base}/stats/summary`, { method: 'DELETE' })).status).toBe(405);

      const resource = await (await fetch(`${base}/metrics/resource`)).text();
      const ts = t0;
      expect(resource).toContain(
        `container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 1.5 ${ts}\n`,
      );
      expect(resource).toContain(
        `container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 3.670016e+07 ${ts}\n`,
      );
      expect(resource).toMatch(
        /container_start_time_seconds\{container="app",namespace="default",pod="web"\} 1\.7803152e\+09 \d+\n/,
      );
      expect(resource).toContain(
        `pod_memory_working_set_bytes{namespace="default",pod="web"} 3.670016e+07 ${ts}\n`,
      );
      expect(resource).toContain(`node_memory_working_set_bytes 2.56e+09 ${ts}\n`);
      expect(resource).toContain('# TYPE node_cpu_usage_seconds_total counter\n');
      expect(resource).toContain('resource_scrape_error 0\n');
      expect(resource).toContain('scrape_error 0\n');

      const probesText = await (await fetch(`${base}/metrics/probes`)).text();
      expect(probesText).toContain(
        'prober_probe_total{probe_type="Liveness",result="successful",container="app",pod="web",namespace="default"} 1',
      );
      expect(probesText).not.toContain('kubelet_other_total');

      const running = (await (await fetch(`${base}/runningpods/`)).json()) as {
        kind: string;
        items: Array<{
          metadata: { uid: string };
          spec: { containers: Array<{ name: string; image: string }> };
        }>;
      };
      expect(running.kind).toBe('PodList');
      expect(running.items[0]?.metadata.uid).toBe('uid-web');
      expect(running.items[0]?.spec.containers).toEqual([{ name: 'app', image, resources: {} }]);

      const configz = (await (await fetch(`${base}/configz`)).json()) as {
        kubeletconfig: Record<string, unknown>;
      };
      expect(configz.kubeletconfig).toMatchObject({
        maxPods: 20,
        syncFrequency: '1m30s',
        containerRuntimeEndpoint: 'unix:///run/cri.sock',
        port: 10250,
      });
    } finally {
      await server.stop();
    }
  });
});

describe('resource metrics text', () => {
  it('formats values as Go does and stamps each sample', () => {
    expect(goFloat(0)).toBe('0');
    expect(goFloat(1.5)).toBe('1.5');
    expect(goFloat(123456)).toBe('123456');
    expect(goFloat(1234567)).toBe('1.234567e+06');
    expect(goFloat(0.00001)).toBe('1e-05');
    expect(goFloat(1.767225601e9)).toBe('1.767225601e+09');
  });

  it('writes only the error gauges when the summary failed', () => {
    expect(renderResourceMetrics(undefined, true)).toBe(
      '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n' +
        '# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n' +
        '# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise\n' +
        '# TYPE scrape_error gauge\nscrape_error 1\n',
    );
  });
});

describe('diskUsage', () => {
  it('is undefined for a missing directory and counts the root inode', async () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-du-'));
    try {
      expect(await diskUsage(path.join(d, 'missing'))).toBeUndefined();
      fs.symlinkSync('/etc', path.join(d, 'link'));
      const du = await diskUsage(d);
      expect(du?.inodes).toBe(2); // the symlink is not followed
    } finally {
      fs.rmSync(d, { recursive: true, force: true });
    }
  });
});
