import type { Quantity } from 'kubernetes-types/api/resource.js';

/** Powers of ten of the decimal suffixes. */
const decimalExponents: Readonly<Record<string, number>> = {
  '': 0,
  n: -9,
  u: -6,
  m: -3,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

/** Powers of two of the binary suffixes. */
const binaryExponents: Readonly<Record<string, number>> = {
  Ki: 10,
  Mi: 20,
  Gi: 30,
  Ti: 40,
  Pi: 50,
  Ei: 60,
};

const quantityPattern =
  /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/** Thrown when a string is not a Kubernetes quantity. @public */
export class QuantityParseError extends Error {
  readonly code = 'InvalidQuantity';
  constructor(readonly input: string) {
    super(
      `quantity ${JSON.stringify(input)} must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
    this.name = 'QuantityParseError';
  }
}

/**
 * The value of a Kubernetes quantity in base units (cores, bytes) as a float: `"500m"` → 0.5,
 * `"1Gi"` → 1073741824, `"1e3"` → 1000. Throws {@link QuantityParseError} on anything else.
 * @public
 */
export function parseQuantity(quantity: Quantity | number): number {
  if (typeof quantity === 'number') {
    if (!Number.isFinite(quantity)) throw new QuantityParseError(String(quantity));
    return quantity;
  }
  const match = quantityPattern.exec(quantity.trim());
  if (!match || quantity.trim() !== quantity) throw new QuantityParseError(quantity);
  const [, number = '', exponent, suffix = ''] = match;
  // Decimal scaling goes into one literal so it is rounded once: "9m" and "0.009" must be the
  // same number, as upstream's exact Cmp has them equal (9 * 1e-3 is 0.009000000000000001).
  if (exponent) return Number(number + exponent);
  const binary = binaryExponents[suffix];
  if (binary !== undefined) return Number(number) * 2 ** binary; // exact: a power of two
  return Number(`${number}e${decimalExponents[suffix] ?? 0}`);
}

/** True when `quantity` parses. @public */
export function isValidQuantity(quantity: unknown): boolean {
  if (typeof quantity !== 'string' && typeof quantity !== 'number') return false;
  try {
    parseQuantity(quantity);
    return true;
  } catch {
    return false;
  }
}

/** The quantity in thousandths, rounded up (upstream `Quantity.MilliValue`): `"0.1"` → 100. @public */
export function quantityMilliValue(quantity: Quantity | number): number {
  return Math.ceil(Math.round(parseQuantity(quantity) * 1e9) / 1e6);
}

/** The quantity rounded up to a whole number (upstream `Quantity.Value`): `"1.5"` → 2. @public */
export function quantityValue(quantity: Quantity | number): number {
  return Math.ceil(Math.round(parseQuantity(quantity) * 1e9) / 1e9);
}
