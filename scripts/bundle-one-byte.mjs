// A check for the bundles the build writes (the agent's, apiserver's client-node): V8 keeps the
// source of every script it runs, and one character beyond Latin-1 anywhere in a file makes it
// keep the whole file as a two-byte string. The agent's main chunk (2.2 MB) once held one micro
// sign in a regular expression (esbuild escapes strings, not regular expressions): 4.5 MiB of
// heap instead of 2.2.
import fs from 'node:fs';

/**
 * Throws, naming the file, line and character, when a written file holds a character above
 * U+00FF.
 */
export function assertOneByteSources(files) {
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    const at = text.search(/[\u0100-\uffff]/);
    if (at < 0) continue;
    const line = text.slice(0, at).split('\n').length;
    const char = text.codePointAt(at)?.toString(16).padStart(4, '0');
    throw new Error(
      `${file}:${line}: U+${char} is beyond Latin-1, so V8 would hold this whole file as a ` +
        'two-byte string: write it as an escape in the source',
    );
  }
}
