import { InMemoryLogger } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import { loggingRecorder } from '../src/logging-recorder.js';

describe('loggingRecorder', () => {
  it('logs each event as one line: a Warning at warn, others at info, naming the object', () => {
    const logger = new InMemoryLogger();
    const recorder = loggingRecorder(logger);
    recorder.event(
      { kind: 'Pod', namespace: 'default', name: 'web', uid: 'u1', fieldPath: 'spec.containers{main}' },
      'Normal',
      'Pulled',
      'Container image "busybox" already present on machine',
    );
    recorder.event({ kind: 'Node', name: 'node-a' }, 'Warning', 'Rebooted', 'Node node-a has been rebooted');
    expect(logger.records).toEqual([
      {
        level: 'info',
        message: 'Container image "busybox" already present on machine',
        fields: {
          event: 'Pulled',
          type: 'Normal',
          object: 'Pod/default/web',
          fieldPath: 'spec.containers{main}',
        },
      },
      {
        level: 'warn',
        message: 'Node node-a has been rebooted',
        fields: { event: 'Rebooted', type: 'Warning', object: 'Node/node-a' },
      },
    ]);
  });
});
