// A tiny CRI client for the scripts (there is no crictl here). Loads the vendored CRI proto at
// run time and speaks runtime.v1 over @grpc/grpc-js.
//
//   node cri-status.mjs [--endpoint unix:///path] [--timeout SECONDS]
//       wait until Version answers and Status reports RuntimeReady and NetworkReady, then print
//       "<runtime name> <version> (CRI <api version>)"; exit 1 with the conditions on timeout.
//   node cri-status.mjs --clean [--endpoint ...]
//       stop and remove every pod sandbox and container the runtime knows.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const protoPath = join(repo, 'packages', 'cri', 'proto', 'runtime', 'v1', 'api.proto');

let grpc;
let protobuf;
try {
  grpc = await import('@grpc/grpc-js');
  protobuf = (await import('protobufjs')).default;
} catch (err) {
  console.error(`cri-status: cannot load @grpc/grpc-js/protobufjs (run npm ci in ${repo}): ${err.message}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    endpoint: { type: 'string', default: process.env.KUBELET_KIT_CRI_ENDPOINT },
    timeout: { type: 'string', default: '60' },
    clean: { type: 'boolean', default: false },
  },
});
if (!values.endpoint) {
  console.error('cri-status: no endpoint (--endpoint or KUBELET_KIT_CRI_ENDPOINT)');
  process.exit(2);
}
if (!existsSync(protoPath)) {
  console.error(`cri-status: ${protoPath} missing`);
  process.exit(2);
}

const root = protobuf.loadSync(protoPath);
const client = new grpc.Client(values.endpoint, grpc.credentials.createInsecure());

function call(service, method, request = {}, deadlineMs = 10_000) {
  const svc = root.lookupService(`runtime.v1.${service}`);
  const m = svc.methods[method];
  const reqType = root.lookupType(m.requestType);
  const resType = root.lookupType(m.responseType);
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      `/runtime.v1.${service}/${method}`,
      (obj) => Buffer.from(reqType.encode(reqType.fromObject(obj)).finish()),
      (buf) => resType.toObject(resType.decode(buf), { enums: String, longs: String, defaults: true }),
      request,
      new grpc.Metadata(),
      { deadline: Date.now() + deadlineMs },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitReady(timeoutS) {
  const until = Date.now() + timeoutS * 1000;
  let last = 'no answer yet';
  for (;;) {
    try {
      const version = await call('RuntimeService', 'Version', { version: 'v1' }, 5_000);
      const status = await call('RuntimeService', 'Status', {}, 5_000);
      const conditions = status.status?.conditions ?? [];
      const ready = (type) => conditions.some((c) => c.type === type && c.status);
      if (ready('RuntimeReady') && ready('NetworkReady')) {
        return `${version.runtimeName} ${version.runtimeVersion} (CRI ${version.runtimeApiVersion})`;
      }
      last = conditions.map((c) => `${c.type}=${c.status} ${c.reason} ${c.message}`.trim()).join('; ');
    } catch (err) {
      last = err.details || err.message;
    }
    if (Date.now() >= until)
      throw new Error(`CRI at ${values.endpoint} not ready after ${timeoutS}s: ${last}`);
    await sleep(250);
  }
}

async function clean() {
  const { items: sandboxes } = await call('RuntimeService', 'ListPodSandbox', {});
  const { containers } = await call('RuntimeService', 'ListContainers', {});
  for (const c of containers) {
    await call('RuntimeService', 'StopContainer', { containerId: c.id, timeout: 0 }, 30_000).catch(() => {});
    await call('RuntimeService', 'RemoveContainer', { containerId: c.id }, 30_000);
  }
  for (const s of sandboxes) {
    await call('RuntimeService', 'StopPodSandbox', { podSandboxId: s.id }, 60_000);
    await call('RuntimeService', 'RemovePodSandbox', { podSandboxId: s.id }, 60_000);
  }
  return `removed ${sandboxes.length} pod sandbox(es) and ${containers.length} container(s)`;
}

try {
  console.log(values.clean ? await clean() : await waitReady(Number(values.timeout)));
} catch (err) {
  console.error(`cri-status: ${err.details || err.message}`);
  process.exitCode = 1;
} finally {
  client.close();
}
