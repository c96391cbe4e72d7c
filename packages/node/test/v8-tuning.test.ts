import v8 from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { applyAgentV8Tuning } from '../src/v8-tuning.js';

// The flag is V8's, process-wide and cannot be read back: the tests watch what is asked of V8.
const setFlags = vi.spyOn(v8, 'setFlagsFromString').mockImplementation(() => {});

afterEach(() => {
  setFlags.mockClear();
});

describe('applyAgentV8Tuning', () => {
  it("sets V8's interrupt budget to four times Node 20's default when Node was started without one", () => {
    expect(applyAgentV8Tuning([])).toBe(true);
    expect(setFlags.mock.calls).toEqual([[`--interrupt-budget=${4 * 67_584}`]]);
    setFlags.mockClear();
    expect(applyAgentV8Tuning(['--enable-source-maps', '--max-old-space-size=512'])).toBe(true);
    expect(setFlags.mock.calls).toEqual([['--interrupt-budget=270336']]);
  });

  it("leaves a budget given on Node's command line alone, in either spelling", () => {
    expect(applyAgentV8Tuning(['--interrupt-budget=1000'])).toBe(false);
    expect(applyAgentV8Tuning(['--interrupt_budget=1000'])).toBe(false);
    expect(applyAgentV8Tuning(['--interrupt-budget', '1000'])).toBe(false);
    expect(setFlags).not.toHaveBeenCalled();
  });

  it('does not mistake a longer flag for the budget', () => {
    expect(applyAgentV8Tuning(['--interrupt-budget-for-feedback-allocation=500'])).toBe(true);
    expect(setFlags).toHaveBeenCalledWith('--interrupt-budget=270336');
  });

  it("reads Node's own command line by default", () => {
    const saved = process.execArgv;
    process.execArgv = ['--interrupt-budget=5'];
    try {
      expect(applyAgentV8Tuning()).toBe(false);
    } finally {
      process.execArgv = saved;
    }
    expect(setFlags).not.toHaveBeenCalled();
  });
});

describe('apply-v8-tuning (the first import of the kubelet-kit command)', () => {
  it('tunes V8 as it is imported', async () => {
    const saved = process.execArgv;
    process.execArgv = [];
    try {
      await import('../src/apply-v8-tuning.js');
    } finally {
      process.execArgv = saved;
    }
    expect(setFlags).toHaveBeenCalledWith('--interrupt-budget=270336');
  });
});
