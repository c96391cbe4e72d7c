import { describe, expect, it } from 'vitest';
import { CodedError, NetworkNotReadyError } from '../src/index.js';

describe('NetworkNotReadyError', () => {
  it("is an Error with upstream's text and a code to switch on", () => {
    const err = new NetworkNotReadyError('cni config uninitialized');
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe('network is not ready: cni config uninitialized');
    expect(err.code).toBe('NetworkNotReady');
    expect(err.name).toBe('NetworkNotReadyError');
  });

  it("names the runtime's network by default", () => {
    expect(new NetworkNotReadyError().message).toBe(
      'network is not ready: container runtime network not ready',
    );
  });
});

describe('CodedError', () => {
  it('carries its name, code, message and cause', () => {
    const cause = new Error('root');
    const err = new CodedError('SomeError', 'Some', 'went wrong', { cause });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('SomeError');
    expect(err.code).toBe('Some');
    expect(err.message).toBe('went wrong');
    expect(err.cause).toBe(cause);
  });
});
