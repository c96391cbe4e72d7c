import { describe, expect, it } from 'vitest';
import { applyAgentV8Tuning } from '../src/v8-tuning.js';

describe('applyAgentV8Tuning', () => {
  it('applies the budget when Node was started without one', () => {
    expect(applyAgentV8Tuning([])).toBe(true);
    expect(applyAgentV8Tuning(['--enable-source-maps', '--max-old-space-size=512'])).toBe(true);
  });

  it("leaves a budget given on Node's command line alone, in either spelling", () => {
    expect(applyAgentV8Tuning(['--interrupt-budget=1000'])).toBe(false);
    expect(applyAgentV8Tuning(['--interrupt_budget=1000'])).toBe(false);
    expect(applyAgentV8Tuning(['--interrupt-budget', '1000'])).toBe(false);
  });

  it('does not mistake a longer flag for the budget', () => {
    expect(applyAgentV8Tuning(['--interrupt-budget-for-feedback-allocation=500'])).toBe(true);
  });
});
