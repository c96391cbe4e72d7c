/**
 * The feature gates `kubelet-kit run` knows (upstream's names). Others are accepted with a
 * warning, since a kubelet configuration often carries gates this agent has no use for.
 * @internal
 */
export const knownFeatureGates = ['EventedPLEG'] as const;

/**
 * Parses `--feature-gates` as upstream's flag: `Name=bool` pairs, comma-separated
 * (`EventedPLEG=true,Foo=false`). A malformed pair or value is an error naming it.
 * @internal
 */
export function parseFeatureGates(value: string): Record<string, boolean> {
  const gates: Record<string, boolean> = {};
  for (const part of value.split(',')) {
    const pair = part.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--feature-gates: missing bool value for ${JSON.stringify(pair)}`);
    const name = pair.slice(0, eq).trim();
    const raw = pair
      .slice(eq + 1)
      .trim()
      .toLowerCase();
    // Go's strconv.ParseBool, as upstream parses each gate's value.
    if (['1', 't', 'true'].includes(raw)) gates[name] = true;
    else if (['0', 'f', 'false'].includes(raw)) gates[name] = false;
    else throw new Error(`--feature-gates: invalid value of ${name}=${pair.slice(eq + 1)}, err: not a bool`);
  }
  return gates;
}

/** The gates of `gates` this agent does not know, for a warning. @internal */
export function unknownFeatureGates(gates: Readonly<Record<string, boolean>>): string[] {
  return Object.keys(gates).filter((g) => !(knownFeatureGates as readonly string[]).includes(g));
}
