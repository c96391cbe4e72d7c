import type { Container, Pod, ProbeResult, RuntimeContainerState } from '@kubelet-kit/core';

// The computePodActions table of upstream's TestComputePodActions,
// TestComputePodActionsWithInitContainers and TestComputePodActionsWithRestartableInitContainers,
// as runtime states to create (in the in-memory CRI or directly) and the actions expected.

export interface ContainerScenario {
  readonly name: string;
  readonly state: RuntimeContainerState;
  readonly exitCode?: number;
  readonly reason?: string;
}

export interface SandboxScenario {
  readonly ready: boolean;
  readonly attempt: number;
  /** False: the sandbox has no IP. */
  readonly ip?: boolean;
}

export interface Scenario {
  readonly pod: Pod;
  /** Newest first. */
  readonly sandboxes: readonly SandboxScenario[];
  /** Created oldest first (their creation order). */
  readonly containers: readonly ContainerScenario[];
  /** Applied to the pod after the containers were created (so hashes can differ). */
  readonly mutatePodAfter?: (pod: Pod) => void;
  /** Probe results by container name (default Success for every container). */
  readonly liveness?: Readonly<Record<string, ProbeResult | 'none'>>;
  readonly startup?: Readonly<Record<string, ProbeResult | 'none'>>;
}

export interface ExpectedActions {
  readonly killPod?: boolean;
  readonly createSandbox?: boolean;
  /** True when the expected sandbox ID is the newest sandbox's. */
  readonly keepSandboxId?: boolean;
  readonly attempt?: number;
  readonly initContainersToStart?: number[];
  readonly containersToStart?: number[];
  /** Container names to kill. */
  readonly containersToKill?: string[];
}

export interface TableCase {
  readonly name: string;
  readonly scenario: Scenario;
  readonly expected: ExpectedActions;
}

type Policy = 'Always' | 'OnFailure' | 'Never';

function basePod(policy: Policy = 'Always'): Pod {
  return {
    metadata: { name: 'foo', namespace: 'new', uid: '12345678' },
    spec: {
      restartPolicy: policy,
      containers: [
        { name: 'foo1', image: 'busybox' },
        { name: 'foo2', image: 'busybox' },
        { name: 'foo3', image: 'busybox' },
      ],
    },
  };
}

function podWithInit(policy: Policy = 'Always'): Pod {
  const pod = basePod(policy);
  pod.spec!.initContainers = [
    { name: 'init1', image: 'bar-image' },
    { name: 'init2', image: 'bar-image' },
    { name: 'init3', image: 'bar-image' },
  ];
  return pod;
}

function podWithSidecars(policy: Policy = 'Always'): Pod {
  const pod = basePod(policy);
  const probe = { exec: { command: ['true'] } };
  const init: Container[] = [
    { name: 'restartable-init-1', image: 'bar-image', restartPolicy: 'Always' },
    {
      name: 'restartable-init-2',
      image: 'bar-image',
      restartPolicy: 'Always',
      livenessProbe: probe,
      startupProbe: probe,
    },
    {
      name: 'restartable-init-3',
      image: 'bar-image',
      restartPolicy: 'Always',
      livenessProbe: probe,
      startupProbe: probe,
    },
  ];
  pod.spec!.initContainers = init;
  return pod;
}

const ready: SandboxScenario = { ready: true, attempt: 0 };
const dead = (attempt = 0): SandboxScenario => ({ ready: false, attempt });
const c = (name: string, state: RuntimeContainerState, exitCode = 0): ContainerScenario => ({
  name,
  state,
  exitCode,
});
const running = (...names: string[]) => names.map((n) => c(n, 'running'));
const mains = running('foo1', 'foo2', 'foo3');
const inits = ['init1', 'init2', 'init3'].map((n) => c(n, 'exited', 0));
const sidecars = running('restartable-init-1', 'restartable-init-2', 'restartable-init-3');
const ok: ExpectedActions = { keepSandboxId: true, attempt: 0 };

function replace(
  list: readonly ContainerScenario[],
  index: number,
  s: Partial<ContainerScenario>,
): ContainerScenario[] {
  return list.map((x, i) => (i === index ? { ...x, ...s } : x));
}

export const basicCases: TableCase[] = [
  {
    name: 'everything is good; do nothing',
    scenario: { pod: basePod(), sandboxes: [ready], containers: mains },
    expected: { ...ok },
  },
  {
    name: 'start pod sandbox and all containers for a new pod',
    scenario: { pod: basePod(), sandboxes: [], containers: [] },
    expected: { killPod: true, createSandbox: true, attempt: 0, containersToStart: [0, 1, 2] },
  },
  {
    name: 'restart exited containers if RestartPolicy == Always',
    scenario: {
      pod: basePod(),
      sandboxes: [ready],
      containers: [c('foo1', 'running'), c('foo2', 'exited', 0), c('foo3', 'exited', 111)],
    },
    expected: { ...ok, containersToStart: [1, 2] },
  },
  {
    name: 'restart failed containers if RestartPolicy == OnFailure',
    scenario: {
      pod: basePod('OnFailure'),
      sandboxes: [ready],
      containers: [c('foo1', 'running'), c('foo2', 'exited', 0), c('foo3', 'exited', 111)],
    },
    expected: { ...ok, containersToStart: [2] },
  },
  {
    name: 'restart created but not started containers if RestartPolicy == OnFailure',
    scenario: {
      pod: basePod('OnFailure'),
      sandboxes: [ready],
      containers: [c('foo1', 'exited', 0), c('foo2', 'created'), c('foo3', 'running')],
    },
    expected: { ...ok, containersToStart: [1] },
  },
  {
    name: "don't restart containers if RestartPolicy == Never",
    scenario: {
      pod: basePod('Never'),
      sandboxes: [ready],
      containers: [c('foo1', 'running'), c('foo2', 'exited', 0), c('foo3', 'exited', 111)],
    },
    expected: { ...ok, containersToStart: [] },
  },
  {
    name: 'Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always',
    scenario: { pod: basePod(), sandboxes: [dead()], containers: mains },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      containersToStart: [0, 1, 2],
      containersToKill: [],
    },
  },
  {
    name: 'Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead, and RestartPolicy == OnFailure',
    scenario: {
      pod: basePod('OnFailure'),
      sandboxes: [dead()],
      containers: [c('foo1', 'running'), c('foo2', 'exited', 0), c('foo3', 'running')],
    },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      containersToStart: [0, 2],
    },
  },
  {
    name: 'Kill pod and recreate all containers if the PodSandbox does not have an IP',
    scenario: { pod: basePod(), sandboxes: [{ ready: true, attempt: 0, ip: false }], containers: mains },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      containersToStart: [0, 1, 2],
    },
  },
  {
    name: "Kill and recreate the container if the container's spec changed",
    scenario: {
      pod: basePod(),
      sandboxes: [ready],
      containers: mains,
      mutatePodAfter: (p) => {
        p.spec!.containers[1]!.image = 'busybox:v2';
      },
    },
    expected: { ...ok, containersToStart: [1], containersToKill: ['foo2'] },
  },
  {
    name: "Kill and recreate the container if the container's spec changed, even if RestartPolicy == Never",
    scenario: {
      pod: basePod('Never'),
      sandboxes: [ready],
      containers: mains,
      mutatePodAfter: (p) => {
        p.spec!.containers[1]!.image = 'busybox:v2';
      },
    },
    expected: { ...ok, containersToStart: [1], containersToKill: ['foo2'] },
  },
  {
    name: 'Kill and recreate the container if the liveness check has failed',
    scenario: { pod: basePod(), sandboxes: [ready], containers: mains, liveness: { foo2: 'Failure' } },
    expected: { ...ok, containersToStart: [1], containersToKill: ['foo2'] },
  },
  {
    name: 'Kill the container but do not restart it if the liveness check has failed and RestartPolicy == Never',
    scenario: { pod: basePod('Never'), sandboxes: [ready], containers: mains, liveness: { foo2: 'Failure' } },
    expected: { ...ok, containersToStart: [], containersToKill: ['foo2'] },
  },
  {
    name: 'Kill and recreate the container if the startup check has failed',
    scenario: { pod: basePod(), sandboxes: [ready], containers: mains, startup: { foo2: 'Failure' } },
    expected: { ...ok, containersToStart: [1], containersToKill: ['foo2'] },
  },
  {
    name: 'Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and all containers exited',
    scenario: {
      pod: basePod('Never'),
      sandboxes: [dead(1)],
      containers: ['foo1', 'foo2', 'foo3'].map((n) => c(n, 'exited', 0)),
    },
    expected: { killPod: true, createSandbox: false, keepSandboxId: true, attempt: 2, containersToStart: [] },
  },
  {
    name: 'Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=OnFailure and all containers succeeded',
    scenario: {
      pod: basePod('OnFailure'),
      sandboxes: [dead(1)],
      containers: ['foo1', 'foo2', 'foo3'].map((n) => c(n, 'exited', 0)),
    },
    expected: { killPod: true, createSandbox: false, keepSandboxId: true, attempt: 2, containersToStart: [] },
  },
  {
    name: 'Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and no containers have ever been created',
    scenario: { pod: basePod('Never'), sandboxes: [dead(2)], containers: [] },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 3,
      containersToStart: [0, 1, 2],
    },
  },
  {
    name: 'Kill and recreate the container if the container is in unknown state',
    scenario: {
      pod: basePod('Never'),
      sandboxes: [ready],
      containers: replace(mains, 1, { state: 'unknown' }),
    },
    expected: { ...ok, containersToStart: [1], containersToKill: ['foo2'] },
  },
  {
    name: 'Restart the container if the container is in created state',
    scenario: {
      pod: basePod('Never'),
      sandboxes: [ready],
      containers: replace(mains, 1, { state: 'created' }),
    },
    expected: { ...ok, containersToStart: [1] },
  },
  {
    name: 'Kill the pod if every container exited and RestartPolicy == Never',
    scenario: {
      pod: basePod('Never'),
      sandboxes: [ready],
      containers: ['foo1', 'foo2', 'foo3'].map((n) => c(n, 'exited', 1)),
    },
    expected: { ...ok, killPod: true, containersToStart: [] },
  },
];

export const initCases: TableCase[] = [
  {
    name: 'initialization completed; start all containers',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: inits },
    expected: { ...ok, initContainersToStart: [], containersToStart: [0, 1, 2] },
  },
  {
    name: 'no init containers have been started; start the first one',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: [] },
    expected: { ...ok, initContainersToStart: [0], containersToStart: [] },
  },
  {
    name: 'initialization in progress; do nothing',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: replace(inits, 2, { state: 'running' }) },
    expected: { ...ok, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'Kill pod and restart the first init container if the pod sandbox is dead',
    scenario: { pod: podWithInit(), sandboxes: [dead()], containers: inits },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [0],
      containersToStart: [],
    },
  },
  {
    name: 'initialization failed; restart the last init container if RestartPolicy == Always',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: replace(inits, 2, { exitCode: 137 }) },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'initialization failed; restart the last init container if RestartPolicy == OnFailure',
    scenario: {
      pod: podWithInit('OnFailure'),
      sandboxes: [ready],
      containers: replace(inits, 2, { exitCode: 137 }),
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'initialization failed; kill pod if RestartPolicy == Never',
    scenario: {
      pod: podWithInit('Never'),
      sandboxes: [ready],
      containers: replace(inits, 2, { exitCode: 137 }),
    },
    expected: { ...ok, killPod: true, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'init container OOMKilled counts as failed; kill pod if RestartPolicy == Never',
    scenario: {
      pod: podWithInit('Never'),
      sandboxes: [ready],
      containers: replace(inits, 2, { exitCode: 0, reason: 'OOMKilled' }),
    },
    expected: { ...ok, killPod: true, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'init container state unknown; kill and recreate the last init container if RestartPolicy == Always',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: replace(inits, 2, { state: 'unknown' }) },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [], containersToKill: ['init3'] },
  },
  {
    name: 'init container state unknown; kill and recreate the last init container if RestartPolicy == OnFailure',
    scenario: {
      pod: podWithInit('OnFailure'),
      sandboxes: [ready],
      containers: replace(inits, 2, { state: 'unknown' }),
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [], containersToKill: ['init3'] },
  },
  {
    name: 'init container state unknown; kill pod if RestartPolicy == Never',
    scenario: {
      pod: podWithInit('Never'),
      sandboxes: [ready],
      containers: replace(inits, 2, { state: 'unknown' }),
    },
    expected: { ...ok, killPod: true, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'Pod sandbox not ready, init container failed, but RestartPolicy == Never; kill pod only',
    scenario: {
      pod: podWithInit('Never'),
      sandboxes: [dead()],
      containers: replace(inits, 2, { exitCode: 137 }),
    },
    expected: {
      killPod: true,
      createSandbox: false,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [],
      containersToStart: [],
    },
  },
  {
    name: 'Pod sandbox not ready, and RestartPolicy == Never, but no visible init containers;  create a new pod sandbox',
    scenario: { pod: podWithInit('Never'), sandboxes: [dead()], containers: [] },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [0],
      containersToStart: [],
    },
  },
  {
    name: 'Pod sandbox not ready, init container failed, and RestartPolicy == OnFailure; create a new pod sandbox',
    scenario: {
      pod: podWithInit('OnFailure'),
      sandboxes: [dead()],
      containers: replace(inits, 2, { exitCode: 137 }),
    },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [0],
      containersToStart: [],
    },
  },
  {
    name: "some of the init container statuses are missing but the last init container is running, don't restart preceding ones",
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: [c('init3', 'running')] },
    expected: { ...ok, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'an init container is in the created state due to an unknown error when starting container; restart it',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: replace(inits, 2, { state: 'created' }) },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'main containers running after a completed init; init containers are not rerun',
    scenario: { pod: podWithInit(), sandboxes: [ready], containers: [...inits, ...mains] },
    expected: { ...ok, initContainersToStart: [], containersToStart: [] },
  },
];

export const sidecarCases: TableCase[] = [
  {
    name: 'initialization completed; start all containers',
    scenario: { pod: podWithSidecars(), sandboxes: [ready], containers: sidecars },
    expected: { ...ok, initContainersToStart: [], containersToStart: [0, 1, 2] },
  },
  {
    name: 'no init containers have been started; start the first one',
    scenario: { pod: podWithSidecars(), sandboxes: [ready], containers: [] },
    expected: { ...ok, initContainersToStart: [0], containersToStart: [] },
  },
  {
    name: 'an init container is stuck in the created state; restart it',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: replace(sidecars, 2, { state: 'created' }),
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'restartable init container has started; start the next',
    scenario: { pod: podWithSidecars(), sandboxes: [ready], containers: sidecars.slice(0, 1) },
    expected: { ...ok, initContainersToStart: [1], containersToStart: [] },
  },
  {
    name: 'livenessProbe has not been run; start the nothing',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars.slice(0, 2),
      liveness: { 'restartable-init-2': 'none' },
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'livenessProbe in progress; start the next',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars.slice(0, 2),
      liveness: { 'restartable-init-2': 'Unknown' },
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'livenessProbe has completed; start the next',
    scenario: { pod: podWithSidecars(), sandboxes: [ready], containers: sidecars.slice(0, 2) },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'kill and recreate the restartable init container if the liveness check has failed',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars,
      liveness: { 'restartable-init-3': 'Failure' },
    },
    expected: {
      ...ok,
      initContainersToStart: [2],
      containersToStart: [0, 1, 2],
      containersToKill: ['restartable-init-3'],
    },
  },
  {
    name: 'startupProbe has not been run; do nothing',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars.slice(0, 2),
      startup: { 'restartable-init-2': 'none' },
    },
    expected: { ...ok, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'startupProbe in progress; do nothing',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars.slice(0, 2),
      startup: { 'restartable-init-2': 'Unknown' },
    },
    expected: { ...ok, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'startupProbe has completed; start the next',
    scenario: { pod: podWithSidecars(), sandboxes: [ready], containers: sidecars.slice(0, 2) },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: 'kill and recreate the restartable init container if the startup check has failed',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars,
      startup: { 'restartable-init-3': 'Failure' },
    },
    expected: {
      ...ok,
      initContainersToStart: [2],
      containersToStart: [],
      containersToKill: ['restartable-init-3'],
    },
  },
  {
    name: 'kill and recreate the restartable init container if the container definition changes',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: sidecars,
      mutatePodAfter: (p) => {
        p.spec!.initContainers![2]!.image = 'foo-image';
      },
    },
    expected: {
      ...ok,
      initContainersToStart: [2],
      containersToStart: [0, 1, 2],
      containersToKill: ['restartable-init-3'],
    },
  },
  {
    name: 'restart terminated restartable init container and next init container',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: replace(replace(sidecars, 0, { state: 'exited' }), 2, { state: 'exited' }),
    },
    expected: { ...ok, initContainersToStart: [0, 2], containersToStart: [] },
  },
  {
    name: 'restart terminated restartable init container and regular containers',
    scenario: {
      pod: podWithSidecars(),
      sandboxes: [ready],
      containers: replace(sidecars, 0, { state: 'exited' }),
    },
    expected: { ...ok, initContainersToStart: [0], containersToStart: [0, 1, 2] },
  },
  {
    name: 'Pod sandbox not ready, restartable init container failed, but RestartPolicy == Never; kill pod only',
    scenario: {
      pod: podWithSidecars('Never'),
      sandboxes: [dead()],
      containers: replace(sidecars, 2, { state: 'exited', exitCode: 137 }),
    },
    expected: {
      killPod: true,
      createSandbox: false,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [],
      containersToStart: [],
    },
  },
  {
    name: 'Pod sandbox not ready, and RestartPolicy == Never, but no visible restartable init containers;  create a new pod sandbox',
    scenario: { pod: podWithSidecars('Never'), sandboxes: [dead()], containers: [] },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [0],
      containersToStart: [],
    },
  },
  {
    name: 'Pod sandbox not ready, restartable init container failed, and RestartPolicy == OnFailure; create a new pod sandbox',
    scenario: {
      pod: podWithSidecars('OnFailure'),
      sandboxes: [dead()],
      containers: replace(sidecars, 2, { state: 'exited', exitCode: 137 }),
    },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [0],
      containersToStart: [],
    },
  },
  {
    name: 'Pod sandbox not ready, restartable init container failed, and RestartPolicy == Always; create a new pod sandbox',
    scenario: {
      pod: podWithSidecars('Always'),
      sandboxes: [dead()],
      containers: replace(sidecars, 2, { state: 'exited', exitCode: 137 }),
    },
    expected: {
      killPod: true,
      createSandbox: true,
      keepSandboxId: true,
      attempt: 1,
      initContainersToStart: [0],
      containersToStart: [],
    },
  },
  {
    name: "initialization failed; restart the last restartable init container even if pod's RestartPolicy == Never",
    scenario: {
      pod: podWithSidecars('Never'),
      sandboxes: [ready],
      containers: replace(sidecars, 2, { state: 'exited', exitCode: 137 }),
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: "restartable init container state unknown; kill and recreate the last restartable init container even if pod's RestartPolicy == Never",
    scenario: {
      pod: podWithSidecars('Never'),
      sandboxes: [ready],
      containers: replace(sidecars, 2, { state: 'unknown' }),
    },
    expected: {
      ...ok,
      initContainersToStart: [2],
      containersToStart: [],
      containersToKill: ['restartable-init-3'],
    },
  },
  {
    name: "restart restartable init container if regular containers are running even if pod's RestartPolicy == Never",
    scenario: {
      pod: podWithSidecars('Never'),
      sandboxes: [ready],
      containers: [...replace(sidecars, 2, { state: 'exited', exitCode: 137 }), ...mains],
    },
    expected: { ...ok, initContainersToStart: [2], containersToStart: [] },
  },
  {
    name: "kill the pod if all main containers succeeded if pod's RestartPolicy == Never",
    scenario: {
      pod: podWithSidecars('Never'),
      sandboxes: [ready],
      containers: [...sidecars, ...['foo1', 'foo2', 'foo3'].map((n) => c(n, 'exited', 0))],
    },
    expected: { ...ok, killPod: true, initContainersToStart: [], containersToStart: [] },
  },
  {
    name: 'some of the init container statuses are missing but the last init container is running, restart restartable init and regular containers',
    scenario: { pod: podWithSidecars(), sandboxes: [ready], containers: sidecars.slice(2) },
    expected: { ...ok, initContainersToStart: [0, 1], containersToStart: [0, 1, 2] },
  },
];
