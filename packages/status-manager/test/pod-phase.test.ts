import type { ContainerStatus } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { getPhase, isPodPhaseTerminal, type PodPhase, reconcilePodPhase } from '../src/index.js';
import {
  failed,
  podWith,
  running,
  spec,
  started,
  succeeded,
  waiting,
  waitingWithLastTermination,
} from './helpers.js';

interface PhaseCase {
  readonly name: string;
  readonly statuses: ContainerStatus[];
  readonly terminal?: boolean;
  readonly want: PodPhase;
}

function table(
  title: string,
  podSpec: ReturnType<typeof spec>,
  cases: PhaseCase[],
  extra: Parameters<typeof podWith>[1] = {},
) {
  describe(title, () => {
    it.each(cases)('$name', ({ statuses, terminal, want }) => {
      expect(getPhase(podWith(podSpec, extra), statuses, terminal ?? false)).toBe(want);
    });
  });
}

// upstream TestPodPhaseWithRestartAlways
table('restart Always', spec('Always', ['containerA', 'containerB']), [
  { name: 'waiting', statuses: [], want: 'Pending' },
  { name: 'all running', statuses: [running('containerA'), running('containerB')], want: 'Running' },
  {
    name: 'all stopped with restart always',
    statuses: [succeeded('containerA'), succeeded('containerB')],
    want: 'Running',
  },
  {
    name: 'all succeeded with restart always, but the pod is terminal',
    statuses: [succeeded('containerA'), succeeded('containerB')],
    terminal: true,
    want: 'Succeeded',
  },
  {
    name: 'all stopped with restart always, but the pod is terminal',
    statuses: [succeeded('containerA'), failed('containerB')],
    terminal: true,
    want: 'Failed',
  },
  {
    name: 'mixed state #1 with restart always',
    statuses: [running('containerA'), succeeded('containerB')],
    want: 'Running',
  },
  { name: 'mixed state #2 with restart always', statuses: [running('containerA')], want: 'Pending' },
  {
    name: 'mixed state #3 with restart always',
    statuses: [running('containerA'), waiting('containerB')],
    want: 'Pending',
  },
  {
    name: 'backoff crashloop container with restart always',
    statuses: [running('containerA'), waitingWithLastTermination('containerB')],
    want: 'Running',
  },
]);

// upstream TestPodPhaseWithRestartAlwaysInitContainers
table('restart Always with an init container', spec('Always', ['containerA', 'containerB'], ['containerX']), [
  { name: 'empty, waiting', statuses: [], want: 'Pending' },
  { name: 'init container running', statuses: [running('containerX')], want: 'Pending' },
  { name: 'init container terminated non-zero', statuses: [failed('containerX')], want: 'Pending' },
  {
    name: 'init container waiting, terminated zero',
    statuses: [waitingWithLastTermination('containerX')],
    want: 'Pending',
  },
  {
    name: 'init container waiting, terminated non-zero',
    statuses: [waitingWithLastTermination('containerX', -1)],
    want: 'Pending',
  },
  { name: 'init container waiting, not terminated', statuses: [waiting('containerX')], want: 'Pending' },
  {
    name: 'init container succeeded',
    statuses: [succeeded('containerX'), running('containerA'), running('containerB')],
    want: 'Running',
  },
]);

// upstream TestPodPhaseWithRestartAlwaysRestartableInitContainers
table(
  'restart Always with a sidecar',
  spec('Always', ['containerA', 'containerB'], [{ name: 'containerX', sidecar: true }]),
  [
    { name: 'empty, waiting', statuses: [], want: 'Pending' },
    { name: 'restartable init container running', statuses: [running('containerX')], want: 'Pending' },
    { name: 'restartable init container stopped', statuses: [succeeded('containerX')], want: 'Pending' },
    {
      name: 'restartable init container waiting, terminated zero',
      statuses: [waitingWithLastTermination('containerX')],
      want: 'Pending',
    },
    {
      name: 'restartable init container waiting, not terminated',
      statuses: [waiting('containerX')],
      want: 'Pending',
    },
    {
      name: 'restartable init container started, 1/2 regular container running',
      statuses: [started('containerX'), running('containerA')],
      want: 'Pending',
    },
    {
      name: 'restartable init container started, all regular containers running',
      statuses: [started('containerX'), running('containerA'), running('containerB')],
      want: 'Running',
    },
    {
      name: 'restartable init container running, all regular containers running',
      statuses: [running('containerX'), running('containerA'), running('containerB')],
      want: 'Running',
    },
    {
      name: 'restartable init container stopped, all regular containers running',
      statuses: [succeeded('containerX'), running('containerA'), running('containerB')],
      want: 'Running',
    },
    {
      name: 'backoff crashloop restartable init container, all regular containers running',
      statuses: [waitingWithLastTermination('containerX'), running('containerA'), running('containerB')],
      want: 'Running',
    },
    {
      name: 'all regular containers succeeded and restartable init container failed, but the pod is terminal',
      statuses: [failed('containerX'), succeeded('containerA'), succeeded('containerB')],
      terminal: true,
      want: 'Succeeded',
    },
  ],
);

// upstream TestPodPhaseWithRestartAlwaysAndPodHasRun
table(
  'restart Always, init container and sidecar, pod has run',
  spec('Always', ['containerA'], ['containerX', { name: 'containerY', sidecar: true }]),
  [
    {
      name: 'regular init container, sidecar and regular container all running',
      statuses: [running('containerX'), running('containerY'), running('containerA')],
      want: 'Pending',
    },
    {
      name: 'regular container stopped, sidecar and regular init container running',
      statuses: [running('containerX'), running('containerY'), succeeded('containerA')],
      want: 'Pending',
    },
    {
      name: 'regular init container succeeded, sidecar running, regular container stopped',
      statuses: [succeeded('containerX'), running('containerY'), succeeded('containerA')],
      want: 'Running',
    },
    {
      name: 'regular init container succeeded, sidecar and regular container running',
      statuses: [succeeded('containerX'), running('containerY'), running('containerA')],
      want: 'Running',
    },
  ],
);

// upstream TestPodPhaseWithRestartNever
table('restart Never', spec('Never', ['containerA', 'containerB']), [
  { name: 'waiting', statuses: [], want: 'Pending' },
  {
    name: 'all running with restart never',
    statuses: [running('containerA'), running('containerB')],
    want: 'Running',
  },
  {
    name: 'all succeeded with restart never',
    statuses: [succeeded('containerA'), succeeded('containerB')],
    want: 'Succeeded',
  },
  {
    name: 'all failed with restart never',
    statuses: [failed('containerA'), failed('containerB')],
    want: 'Failed',
  },
  {
    name: 'mixed state #1 with restart never',
    statuses: [running('containerA'), succeeded('containerB')],
    want: 'Running',
  },
  { name: 'mixed state #2 with restart never', statuses: [running('containerA')], want: 'Pending' },
  {
    name: 'mixed state #3 with restart never',
    statuses: [running('containerA'), waiting('containerB')],
    want: 'Pending',
  },
]);

// upstream TestPodPhaseWithRestartNeverInitContainers
table('restart Never with an init container', spec('Never', ['containerA', 'containerB'], ['containerX']), [
  { name: 'init container running', statuses: [running('containerX')], want: 'Pending' },
  { name: 'init container terminated non-zero', statuses: [failed('containerX')], want: 'Failed' },
  {
    name: 'init container waiting, terminated zero',
    statuses: [waitingWithLastTermination('containerX')],
    want: 'Pending',
  },
  {
    name: 'init container waiting, terminated non-zero',
    statuses: [waitingWithLastTermination('containerX', -1)],
    want: 'Failed',
  },
  {
    name: 'init container succeeded',
    statuses: [succeeded('containerX'), running('containerA'), running('containerB')],
    want: 'Running',
  },
]);

// upstream TestPodPhaseWithRestartNeverRestartableInitContainers
table(
  'restart Never with a sidecar',
  spec('Never', ['containerA', 'containerB'], [{ name: 'containerX', sidecar: true }]),
  [
    { name: 'restartable init container running', statuses: [running('containerX')], want: 'Pending' },
    {
      name: 'restartable init container started, one main container running',
      statuses: [started('containerX'), running('containerA')],
      want: 'Pending',
    },
    {
      name: 'restartable init container started, main containers succeeded',
      statuses: [started('containerX'), succeeded('containerA'), succeeded('containerB')],
      want: 'Running',
    },
    {
      name: 'restartable init container running, main containers succeeded',
      statuses: [running('containerX'), succeeded('containerA'), succeeded('containerB')],
      want: 'Running',
    },
    {
      name: 'all containers succeeded',
      statuses: [succeeded('containerX'), succeeded('containerA'), succeeded('containerB')],
      want: 'Succeeded',
    },
    {
      name: 'restartable init container terminated non-zero, main containers succeeded',
      statuses: [failed('containerX'), succeeded('containerA'), succeeded('containerB')],
      want: 'Succeeded',
    },
    {
      name: 'backoff crashloop with non-zero restartable init container, main containers succeeded',
      statuses: [
        waitingWithLastTermination('containerX', -1),
        succeeded('containerA'),
        succeeded('containerB'),
      ],
      want: 'Succeeded',
    },
  ],
);

// upstream TestPodPhaseWithRestartOnFailure
table('restart OnFailure', spec('OnFailure', ['containerA', 'containerB']), [
  { name: 'waiting', statuses: [], want: 'Pending' },
  {
    name: 'all running with restart onfailure',
    statuses: [running('containerA'), running('containerB')],
    want: 'Running',
  },
  {
    name: 'all succeeded with restart onfailure',
    statuses: [succeeded('containerA'), succeeded('containerB')],
    want: 'Succeeded',
  },
  {
    name: 'all failed with restart onfailure',
    statuses: [failed('containerA'), failed('containerB')],
    want: 'Running',
  },
  {
    name: 'all failed with restart onfailure, but the pod is terminal',
    statuses: [failed('containerA'), failed('containerB')],
    terminal: true,
    want: 'Failed',
  },
  {
    name: 'mixed state #1 with restart onfailure',
    statuses: [running('containerA'), succeeded('containerB')],
    want: 'Running',
  },
  {
    name: 'backoff crashloop container with restart onfailure',
    statuses: [running('containerA'), waitingWithLastTermination('containerB', 1)],
    want: 'Running',
  },
]);

// A static pod is never made terminal by podIsTerminal (upstream #116484).
table(
  'static pod',
  spec('Always', ['containerA']),
  [
    {
      name: 'all stopped, terminal, static: still Running',
      statuses: [failed('containerA')],
      terminal: true,
      want: 'Running',
    },
  ],
  {
    metadata: {
      name: 'foo',
      namespace: 'new',
      uid: 's',
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
  },
);

describe('reconcilePodPhase', () => {
  it('keeps the status manager terminal phase when the computed one is not', () => {
    expect(
      reconcilePodPhase('Running', { phase: 'Failed', reason: 'Evicted' }, { phase: 'Running' }),
    ).toEqual({
      phase: 'Failed',
      reason: 'Evicted',
    });
  });

  it('keeps the API terminal phase when the cache has none', () => {
    expect(reconcilePodPhase('Pending', undefined, { phase: 'Succeeded' }).phase).toBe('Succeeded');
  });

  it('forces the API terminal phase back over another terminal phase', () => {
    expect(reconcilePodPhase('Failed', { phase: 'Running' }, { phase: 'Succeeded' }).phase).toBe('Succeeded');
  });

  it('keeps reason and message when the phase does not change, falling back to the API ones', () => {
    expect(
      reconcilePodPhase('Running', { phase: 'Running', message: 'm' }, { phase: 'Running', reason: 'r' }),
    ).toEqual({ phase: 'Running', reason: 'r', message: 'm' });
  });

  it('drops reason and message when the phase changes', () => {
    expect(reconcilePodPhase('Running', { phase: 'Pending', reason: 'r' }, undefined)).toEqual({
      phase: 'Running',
    });
  });

  it('knows the terminal phases', () => {
    expect(
      ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown', undefined].map(isPodPhaseTerminal),
    ).toEqual([false, false, true, true, false, false]);
  });
});
