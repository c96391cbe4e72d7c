import { describe, expect, it } from 'vitest';
import {
  isValidQuantity,
  parseQuantity,
  QuantityParseError,
  quantityMilliValue,
  quantityValue,
} from '../src/index.js';

describe('quantities', () => {
  it.each([
    ['500m', 0.5],
    ['1', 1],
    ['2.5', 2.5],
    ['1k', 1000],
    ['1Ki', 1024],
    ['128Mi', 128 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['1e3', 1000],
    ['1E-3', 0.001],
    ['100n', 1e-7],
    [3, 3],
  ] as const)('%s parses to %d', (input, value) => {
    expect(parseQuantity(input)).toBeCloseTo(value, 12);
  });

  it.each(['', 'abc', '1Zi', '1.2.3', ' 1', '--1', '1 Gi'])('%j is rejected', (input) => {
    expect(() => parseQuantity(input)).toThrow(QuantityParseError);
    expect(isValidQuantity(input)).toBe(false);
  });

  it('rounds milli and whole values up, as upstream', () => {
    expect(quantityMilliValue('0.1')).toBe(100);
    expect(quantityMilliValue('250m')).toBe(250);
    expect(quantityMilliValue('1.0001m')).toBe(2);
    expect(quantityValue('1.5')).toBe(2);
    expect(quantityValue('64Mi')).toBe(67108864);
  });
});
