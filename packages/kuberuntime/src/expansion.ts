// `$(VAR)` expansion of upstream `third_party/forked/golang/expansion`: a known name is replaced,
// an unknown one kept as written, `$$` escapes a `$`, and anything else passes through.

/** Expands `$(NAME)` references in `input` through `mapping`. */
export function expand(input: string, mapping: (name: string) => string): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const next = input[cursor + 1];
    let advance = 1;
    if (next === '$') {
      out += '$';
    } else if (next === '(') {
      const close = input.indexOf(')', cursor + 2);
      if (close < 0) {
        // An unterminated reference is kept literally.
        out += '$(';
      } else {
        out += mapping(input.slice(cursor + 2, close));
        advance = close - cursor;
      }
    } else {
      out += `$${next}`;
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** A mapping over `env` that keeps unknown references as `$(NAME)`. */
export function mappingFuncFor(...envs: ReadonlyMap<string, string>[]): (name: string) => string {
  return (name) => {
    for (const env of envs) {
      const value = env.get(name);
      if (value !== undefined) return value;
    }
    return `$(${name})`;
  };
}
