// Found by the agent's manifest fuzzing: a manifest rejected for a field of the wrong type named
// its pod "/x" (no namespace, the name as written), while one rejected by validation named it
// "default/x-n1". Every rejection of a static pod now names the pod it would have been.
import { describe, expect, it } from 'vitest';
import { decodeStaticPods, PodValidationError } from '../src/index.js';

const file = '/etc/kubernetes/manifests/x.yaml';

function rejection(text: string): PodValidationError {
  try {
    decodeStaticPods(text, { nodeName: 'N1', source: 'file', file });
  } catch (err) {
    expect(err).toBeInstanceOf(PodValidationError);
    return err as PodValidationError;
  }
  throw new Error('accepted');
}

describe('the pod a rejected static manifest names', () => {
  it.each([
    [
      'a wrong type',
      'metadata: {name: x, labels: [a]}\nspec: {containers: [{name: c, image: i}]}',
      'metadata.labels',
    ],
    [
      'a failed validation',
      'metadata: {name: x}\nspec: {containers: [{name: c, image: ""}]}',
      'spec.containers[0].image',
    ],
    [
      'an API reference',
      'metadata: {name: x}\nspec: {containers: [{name: c, image: i}], volumes: [{name: s, secret: {secretName: s}}]}',
      'spec.volumes[0].secret',
    ],
  ])('is default/<name>-<node> for %s', (_what, body, field) => {
    const err = rejection(`apiVersion: v1\nkind: Pod\n${body}\n`);
    expect(err.field).toBe(field);
    expect(err.object).toEqual({ namespace: 'default', name: 'x-n1' });
    expect(err.message).toContain('pod "default/x-n1"');
    expect(err.message).toContain(JSON.stringify(file));
  });

  it('keeps a namespace the manifest gives, and names no pod without a name', () => {
    const typed = rejection(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: kube-system, labels: 5}\nspec: {}\n',
    );
    expect(typed.object).toEqual({ namespace: 'kube-system', name: 'x-n1' });
    const unnamed = rejection('apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\nspec: {}\n');
    expect(unnamed.field).toBe('metadata.name');
    expect(unnamed.object).toEqual({ namespace: 'default' });
  });
});

describe('the object a manifest of the wrong kind or version names', () => {
  it('names a pod of the wrong apiVersion as the static pod, another kind as written', () => {
    const version = rejection('apiVersion: v2\nkind: Pod\nmetadata: {name: x}\nspec: {}\n');
    expect(version.field).toBe('apiVersion');
    expect(version.object).toEqual({ namespace: 'default', name: 'x-n1' });
    const kind = rejection('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n');
    expect(kind.field).toBe('kind');
    expect(kind.object).toEqual({ name: 'x' });
    expect(kind.message).toContain('pod "/x"');
  });
});
