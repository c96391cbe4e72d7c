// A containerd of a test's own, for tests that stop and start the runtime (the shared instance
// must never be restarted). It is made by scripts/containerd/up.sh with every location
// overridden (root, run dir, socket, bridge, pod subnet, CNI network name), so it shares
// nothing with the shared instance but the built image archives' recipe; down.sh removes it.
//
// `stop()` ends the daemon the way an operator's restart does (SIGTERM to the pid in its
// pidfile): the shims and the containers they run stay up. `start()` runs the same daemon
// again on the same config and state, which then recovers them. Needs root, like the scripts.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { RuntimeServiceClient } from '@kubelet-kit/cri';

const run = promisify(execFile);
const scripts = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/containerd');

export interface PrivateContainerdOptions {
  /** Short name: the folders are /var/lib/kubelet-kit-<name> (unless testRoot) and /run/kubelet-kit-<name>. */
  readonly name: string;
  /** Linux bridge name (at most 15 characters), distinct from every other instance's. */
  readonly bridge: string;
  /** Pod subnet (a /16), distinct from every other instance's. */
  readonly podSubnet: string;
  /**
   * The test root instead of /var/lib/kubelet-kit-<name>: containerd's root, config, images and
   * CNI files go there (a test that fills a disk puts it on that disk).
   */
  readonly testRoot?: string;
}

export interface PrivateContainerd {
  /** The CRI endpoint (`unix://…`). */
  readonly endpoint: string;
  /** The environment the scripts ran with (for logs and debugging). */
  readonly env: Readonly<Record<string, string>>;
  /** The daemon's pid, from its pidfile; undefined while stopped. */
  pid(): number | undefined;
  /** SIGTERM to the daemon and wait until it exited (containers keep running in their shims). */
  stop(): Promise<void>;
  /** Runs the daemon again on the same config and state; resolves once it answers the CRI. */
  start(): Promise<void>;
  /** Resolves once the CRI reports RuntimeReady and NetworkReady. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** The last lines of the daemon's log. */
  logTail(lines?: number): string;
  /** down.sh: removes every pod, stops the daemon, removes its bridge, state and root. */
  destroy(): Promise<void>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Makes and starts the instance (up.sh: config, CNI conflist, images imported, ready). */
export async function startPrivateContainerd(options: PrivateContainerdOptions): Promise<PrivateContainerd> {
  if (process.getuid?.() !== 0) throw new Error('a private containerd needs root (as scripts/containerd)');
  const testRoot = options.testRoot ?? `/var/lib/kubelet-kit-${options.name}`;
  const runDir = `/run/kubelet-kit-${options.name}`;
  const env: Record<string, string> = {
    KUBELET_KIT_TEST_ROOT: testRoot,
    KUBELET_KIT_RUN_DIR: runDir,
    KUBELET_KIT_CNI_BRIDGE: options.bridge,
    KUBELET_KIT_POD_SUBNET: options.podSubnet,
    KUBELET_KIT_CNI_NETWORK: `kubelet-kit-${options.bridge}`,
  };
  // Whatever the caller's shell exported for the shared instance must not leak in.
  const scriptEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('KUBELET_KIT_')) scriptEnv[k] = v;
  }
  Object.assign(scriptEnv, env);
  const socket = path.join(runDir, 'containerd.sock');
  const endpoint = `unix://${socket}`;
  const config = path.join(testRoot, 'containerd/config.toml');
  const pidfile = path.join(runDir, 'containerd.pid');
  const logFile = path.join(testRoot, 'containerd.log');
  Object.assign(env, { KUBELET_KIT_CRI_ENDPOINT: endpoint });

  const script = (name: string) =>
    run('bash', [path.join(scripts, name)], { env: scriptEnv, timeout: 170_000, maxBuffer: 16 << 20 });
  const readPid = (): number | undefined => {
    const text = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').trim() : '';
    const pid = Number(text);
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  };

  await script('up.sh');
  let child: ChildProcess | undefined;

  const instance: PrivateContainerd = {
    endpoint,
    env,
    pid: readPid,
    async stop() {
      const pid = readPid();
      if (pid === undefined) return;
      process.kill(pid, 'SIGTERM');
      const deadline = Date.now() + 15_000;
      while (isAlive(pid) && Date.now() < deadline) await sleep(20);
      if (isAlive(pid)) throw new Error(`containerd (pid ${pid}) did not exit within 15 s of SIGTERM`);
      child = undefined;
    },
    async start() {
      if (readPid() !== undefined) throw new Error('containerd is already running');
      const log = fs.openSync(logFile, 'a');
      try {
        // As up.sh starts it: own session, cwd /, output to the log only.
        child = spawn('containerd', ['--config', config], {
          cwd: '/',
          detached: true,
          stdio: ['ignore', log, log],
        });
      } finally {
        fs.closeSync(log);
      }
      child.unref();
      if (child.pid === undefined) throw new Error('containerd did not start');
      fs.writeFileSync(pidfile, `${child.pid}\n`);
      const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 2_000 });
      try {
        const deadline = Date.now() + 30_000;
        for (;;) {
          try {
            await runtime.version({});
            return;
          } catch (err) {
            if (Date.now() > deadline)
              throw new Error(`restarted containerd does not answer: ${String(err)}`);
            if (!isAlive(child.pid)) throw new Error(`containerd exited; log:\n${instance.logTail()}`);
            await sleep(50);
          }
        }
      } finally {
        runtime.close();
      }
    },
    async waitReady(timeoutMs = 60_000) {
      const args = ['--endpoint', endpoint, '--timeout', String(Math.ceil(timeoutMs / 1000))];
      await run('node', [path.join(scripts, 'cri-status.mjs'), ...args], { env: scriptEnv });
    },
    logTail(lines = 40) {
      try {
        return fs.readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    },
    async destroy() {
      // Through a running daemon, down.sh removes the pods over the CRI (CNI DEL included).
      if (readPid() === undefined) await instance.start().catch(() => {});
      await script('down.sh');
      fs.rmSync(testRoot, { recursive: true, force: true });
      fs.rmSync(runDir, { recursive: true, force: true });
    },
  };
  return instance;
}
