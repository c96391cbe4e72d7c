// Deeply nested manifests (found by the agent's manifest fuzzing): the YAML composer recursed
// per level, overflowed the stack, and a second such file in the same process took V8 down with
// a fatal out-of-memory in its RegExp compiler. Nesting is now measured first and refused.
import { describe, expect, it } from 'vitest';
import { decodeStaticPods, maxManifestDepth, PodValidationError } from '../src/index.js';

const options = { nodeName: 'n1', source: 'file', file: '/etc/kubernetes/manifests/deep.yaml' };

function rejection(text: string): PodValidationError {
  try {
    decodeStaticPods(text, options);
  } catch (err) {
    expect(err).toBeInstanceOf(PodValidationError);
    return err as PodValidationError;
  }
  throw new Error('accepted');
}

const pod = (annotations: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: deep\n  annotations: ${annotations}\nspec:\n  containers: [{name: c, image: i}]\n`;

describe('manifest nesting depth', () => {
  it('refuses block, flow and JSON nesting past the limit, naming the file and the document, every time', () => {
    const texts = [
      `${'- '.repeat(3000)}x`,
      `${'['.repeat(5000)}`,
      `${'{a: '.repeat(3000)}1${'}'.repeat(3000)}`,
      pod(`${'['.repeat(2000)}${']'.repeat(2000)}`),
      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":${'['.repeat(20000)}${']'.repeat(20000)}}}`,
    ];
    // Several rounds: the process-killing crash came on the second deep document, not the first.
    for (let round = 0; round < 3; round++) {
      for (const text of texts) {
        const err = rejection(text);
        expect(err.field).toBe('<document>');
        expect(err.file).toBe(options.file);
        expect(err.message).toContain('/etc/kubernetes/manifests/deep.yaml');
        expect(err.message).toContain(`nested more than ${maxManifestDepth} levels deep`);
      }
    }
  });

  it('refuses nesting built from aliases', () => {
    const lines = ['a0: &a0 [x]'];
    for (let i = 1; i <= 300; i++) lines.push(`a${i}: &a${i} [*a${i - 1}]`);
    const err = rejection(
      `apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n${lines.join('\n')}\n`,
    );
    expect(err.message).toMatch(/nested more than|alias/i);
  });

  it('still reads nesting up to the limit', () => {
    const depth = maxManifestDepth - 6;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const [p] = decodeStaticPods(
      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"}],"affinity":{"x":${deep}}}}`,
      options,
    );
    expect(p?.metadata?.name).toBe('x-n1');
    const [q] = decodeStaticPods(pod('{}').replace('spec:', `x: ${deep}\nspec:`), options);
    expect(q?.metadata?.name).toBe('deep-n1');
  });
});
