import v8 from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { applyAgentV8Tuning } from '../src/v8-tuning.js';

// The flags are V8's, process-wide and cannot be read back: the tests watch what is asked of V8.
const setFlags = vi.spyOn(v8, 'setFlagsFromString').mockImplementation(() => {});

afterEach(() => {
  setFlags.mockClear();
});

const budget = `--interrupt-budget=${4 * 67_584}`;
const heapGrowing = '--heap-growing-percent=30';

describe('applyAgentV8Tuning', () => {
  it("sets V8's interrupt budget to four times Node 20's default and bounds the old generation's growth", () => {
    expect(applyAgentV8Tuning([], '')).toBe(true);
    expect(setFlags.mock.calls).toEqual([[budget], [heapGrowing]]);
    setFlags.mockClear();
    expect(applyAgentV8Tuning(['--enable-source-maps', '--max-old-space-size=512'], '')).toBe(true);
    expect(setFlags.mock.calls).toEqual([['--interrupt-budget=270336'], [heapGrowing]]);
  });

  it('lets the old generation grow by 30% of the live heap, unless the user sets the growth', () => {
    for (const [argv, env] of [
      [['--heap-growing-percent=100'], ''],
      [['--heap_growing_percent', '100'], ''],
      [['--enable-source-maps', '--heap-growing-percent=50'], ''],
    ] as const) {
      setFlags.mockClear();
      expect(applyAgentV8Tuning(argv, env)).toBe(true);
      expect(setFlags.mock.calls).toEqual([[budget]]);
    }
  });

  it("leaves a budget given on Node's command line alone, in either spelling", () => {
    for (const argv of [
      ['--interrupt-budget=1000'],
      ['--interrupt_budget=1000'],
      ['--interrupt-budget', '1000'],
    ]) {
      setFlags.mockClear();
      expect(applyAgentV8Tuning(argv, '')).toBe(true);
      expect(setFlags.mock.calls).toEqual([[heapGrowing]]);
    }
  });

  it('sets nothing when the user set both', () => {
    expect(applyAgentV8Tuning(['--interrupt-budget=5'], '--heap-growing-percent=10')).toBe(false);
    expect(setFlags).not.toHaveBeenCalled();
  });

  it('does not mistake a longer flag for one of its own', () => {
    expect(applyAgentV8Tuning(['--interrupt-budget-for-feedback-allocation=500'], '')).toBe(true);
    expect(setFlags).toHaveBeenCalledWith('--interrupt-budget=270336');
  });

  it("reads Node's own command line and NODE_OPTIONS by default", () => {
    const saved = process.execArgv;
    const savedEnv = process.env.NODE_OPTIONS;
    process.execArgv = ['--interrupt-budget=5'];
    process.env.NODE_OPTIONS = '--heap-growing-percent=10';
    try {
      expect(applyAgentV8Tuning()).toBe(false);
    } finally {
      process.execArgv = saved;
      if (savedEnv === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = savedEnv;
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
