// The two micro signs Go takes (U+00B5, U+03BC) are written as escapes: one character beyond
// Latin-1 in a source file makes V8 hold the whole file as a two-byte string, and this one is
// bundled into the agent's largest file (see scripts/bundle-agent.mjs).

/** Go's duration units, in milliseconds. */
const unitMs: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  '\u00b5s': 1e-3,
  '\u03bcs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a duration as Go's `time.ParseDuration` does (`10s`, `1m30s`, `1.5h`, `-2m`, `0`),
 * into milliseconds; undefined when it is not one (`10x`, `10`, `''`).
 *
 * @internal
 */
export function parseGoDuration(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  // Go takes a bare zero, with or without a sign; any other number needs a unit.
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  const part = /^(\d*)(?:\.(\d*))?([a-z\u00b5\u03bc]+)/;
  while (rest !== '') {
    const m = part.exec(rest);
    if (!m || (m[1] === '' && (m[2] ?? '') === '')) return undefined;
    const unit = unitMs[m[3]!];
    if (unit === undefined) return undefined;
    total += Number(`${m[1] || '0'}.${m[2] || '0'}`) * unit;
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}
