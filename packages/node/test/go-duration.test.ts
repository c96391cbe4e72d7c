import { describe, expect, it } from 'vitest';
import { parseGoDuration } from '../src/go-duration.js';

// Cases from Go's time.ParseDuration tests (src/time/time_test.go, parseDurationTests).
describe('parseGoDuration', () => {
  it.each([
    ['0', 0],
    ['-0', 0],
    ['+0', 0],
    ['5s', 5000],
    ['30s', 30_000],
    ['1478s', 1_478_000],
    ['-5s', -5000],
    ['+5s', 5000],
    ['5.6s', 5600],
    ['5.s', 5000],
    ['.5s', 500],
    ['1.004s', 1004],
    ['10ns', 1e-5],
    ['11us', 0.011],
    // Both micro signs: U+00B5 (micro) and U+03BC (Greek mu), as Go takes them.
    ['12\u00b5s', 0.012],
    ['12\u03bcs', 0.012],
    ['13ms', 13],
    ['14s', 14_000],
    ['15m', 900_000],
    ['16h', 57_600_000],
    ['3h30m', 12_600_000],
    ['10.5s4m', 250_500],
    ['-2m3.4s', -123_400],
    ['1h2m3s4ms5us6ns', 3_723_004.005006],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each(['', '3', '-', 's', '.', '-.', '.s', '+.s', '1d', '1.0.0s', '10x', '1\u00b5'])(
    'rejects %j',
    (text) => {
      expect(parseGoDuration(text)).toBeUndefined();
    },
  );
});
