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

// Upstream resource.ParseQuantity / Quantity.Cmp (quantity_test.go TestQuantityParse, TestQuantityCmp).
describe('quantities, upstream cases', () => {
  it('the same value written with a suffix or as a decimal compares equal (Cmp == 0)', () => {
    const unequal: string[] = [];
    for (let i = 1; i < 1000; i++) {
      const decimal = `0.${String(i).padStart(3, '0')}`;
      if (parseQuantity(`${i}m`) !== parseQuantity(decimal)) unequal.push(`${i}m`);
      if (parseQuantity(`${i}u`) !== parseQuantity(`${decimal}e-3`)) unequal.push(`${i}u`);
      if (parseQuantity(`${i}n`) !== parseQuantity(`${decimal}e-6`)) unequal.push(`${i}n`);
    }
    expect(unequal).toEqual([]);
    expect(parseQuantity('100m') < parseQuantity('0.1001')).toBe(true);
    expect(parseQuantity('10000T') > parseQuantity('100Gi')).toBe(true);
  });

  it.each([
    ['100.035k', 100035],
    ['0.0005k', 0.5],
    ['.001', 0.001],
    ['.0001k', 0.1],
    ['1.', 1],
    ['1.G', 1e9],
    ['+1.3E+6', 1.3e6],
    ['-1.025Ti', -1.025 * 2 ** 40],
    ['100.035Ki', 102435.84],
    ['0.5Mi', 524288],
    ['12E', 12e18],
    ['0.5e-2', 0.005],
    ['1E', 1e18],
  ] as const)('%s is exactly %d', (input, value) => {
    expect(parseQuantity(input)).toBe(value);
  });

  it.each(['1.1.M', '1+1.0M', '0.1mi', '0.1am', 'aoeu', '.5i', '1i', '-3.01i', '-3.01e-', '1 ', '1e', '1K'])(
    '%j is rejected',
    (input) => {
      expect(isValidQuantity(input)).toBe(false);
    },
  );
});
