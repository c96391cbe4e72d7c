// The raw CRI floor: RunPodSandbox + CreateContainer + StartContainer per pod, straight through
// the CRI client, with the very configs kuberuntime generates for the same pods (config
// generation, log directories and termination-message files are made before the clock starts).
import os from 'node:os';
import path from 'node:path';
import { generateContainerConfig, generatePodSandboxConfig } from '@kubelet-kit/kuberuntime';

const floorPodIP = '10.244.255.254';

/**
 * The sandbox and container configs the agent (createAgent's defaults: no DNS options, no cgroup
 * parent, logs under `<root>/logs/pods`) would send for each pod.
 */
export async function buildFloorConfigs({ pods, imageService, rootDir, nodeName, nodeIPs }) {
  const podLogsRootDirectory = path.join(rootDir, 'logs', 'pods');
  const images = new Map();
  const result = [];
  for (const pod of pods) {
    const sandboxConfig = generatePodSandboxConfig(pod, 0, { podLogsRootDirectory, cgroupParent: '' });
    const containers = [];
    for (const container of pod.spec.containers) {
      let image = images.get(container.image);
      if (!image) {
        const res = await imageService.imageStatus({ image: { image: container.image } });
        if (!res.image?.id) throw new Error(`image ${container.image} is not in the runtime`);
        image = res.image;
        images.set(container.image, image);
      }
      const { config } = await generateContainerConfig(pod, container, {
        containerType: 'container',
        restartCount: 0,
        imageRef: image.id,
        imageUser: { username: image.username, ...(image.uid ? { uid: image.uid.value } : {}) },
        // The agent knows the pod IP (from the sandbox) when it makes a container, and mounts a
        // kubelet-managed /etc/hosts with it; the floor, whose configs are made before its
        // sandboxes, uses a stand-in IP: the value does not change the runtime's work.
        env: { nodeName, podIP: floorPodIP, podIPs: [floorPodIP], hostIPs: nodeIPs },
        volumes: new Map(),
        podDir: path.join(rootDir, 'pods', pod.metadata.uid),
        etcHosts: { podDir: path.join(rootDir, 'pods', pod.metadata.uid) },
        podLogsRootDirectory,
        memoryCapacity: os.totalmem(),
        resources: {},
      });
      containers.push(config);
    }
    result.push({ sandboxConfig, containers });
  }
  return result;
}

/** Makes every pod with at most `concurrency` pods in flight; resolves to the elapsed seconds. */
export async function runFloor(runtime, configs, concurrency) {
  let next = 0;
  const worker = async () => {
    while (next < configs.length) {
      const { sandboxConfig, containers } = configs[next++];
      const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig });
      for (const config of containers) {
        const { containerId } = await runtime.createContainer({ podSandboxId, config, sandboxConfig });
        await runtime.startContainer({ containerId });
      }
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, configs.length) }, worker));
  return (performance.now() - start) / 1000;
}

/** Stops and removes (with their containers) the sandboxes `select` picks, a few at a time. */
export async function removeSandboxes(runtime, select, concurrency = 16) {
  const sandboxes = (await runtime.listPodSandbox({})).items.filter(select);
  let next = 0;
  const worker = async () => {
    while (next < sandboxes.length) {
      const s = sandboxes[next++];
      await runtime.stopPodSandbox({ podSandboxId: s.id }).catch(() => {});
      await runtime.removePodSandbox({ podSandboxId: s.id }).catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const left = (await runtime.listPodSandbox({})).items.filter(select);
  if (left.length) throw new Error(`${left.length} sandboxes could not be removed`);
  return sandboxes.length;
}
