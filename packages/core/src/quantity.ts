import type { Quantity } from './k8s.js';

const suffixes: Readonly<Record<string, number>> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const quantityPattern =
  /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/** Thrown when a string is not a Kubernetes quantity. */
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
 */
export function parseQuantity(quantity: Quantity | number): number {
  if (typeof quantity === 'number') {
    if (!Number.isFinite(quantity)) throw new QuantityParseError(String(quantity));
    return quantity;
  }
  const match = quantityPattern.exec(quantity.trim());
  if (!match || quantity.trim() !== quantity) throw new QuantityParseError(quantity);
  const number = Number(match[1]);
  if (match[2]) return number * 10 ** Number(match[2].slice(1));
  return number * (suffixes[match[3] ?? ''] ?? 1);
}

/** True when `quantity` parses. */
export function isValidQuantity(quantity: unknown): boolean {
  if (typeof quantity !== 'string' && typeof quantity !== 'number') return false;
  try {
    parseQuantity(quantity);
    return true;
  } catch {
    return false;
  }
}

/** The quantity in thousandths, rounded up (upstream `Quantity.MilliValue`): `"0.1"` → 100. */
export function quantityMilliValue(quantity: Quantity | number): number {
  return Math.ceil(Math.round(parseQuantity(quantity) * 1e9) / 1e6);
}

/** The quantity rounded up to a whole number (upstream `Quantity.Value`): `"1.5"` → 2. */
export function quantityValue(quantity: Quantity | number): number {
  return Math.ceil(Math.round(parseQuantity(quantity) * 1e9) / 1e9);
}
