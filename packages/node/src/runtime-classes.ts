import fs from 'node:fs';
import path from 'node:path';
import type { RuntimeClass, RuntimeClassGetter } from '@kubelet-kit/core';
import type YAML from 'yaml';
import { yaml } from './load-yaml.js';

// RuntimeClasses from local files (`--runtime-classes`). Upstream's kubelet reads them from the
// API server through an informer: with a kubeconfig the agent does too
// (`@kubelet-kit/apiserver`), these files then supplying only names the API server lacks.

/** A RuntimeClass file that cannot be used, naming the file and the field. */
export class RuntimeClassFileError extends Error {
  constructor(file: string, detail: string) {
    super(`RuntimeClass file ${file}: ${detail}`);
    this.name = 'RuntimeClassFileError';
  }
}

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A fixed set of RuntimeClasses by name. */
export class LocalRuntimeClassList implements RuntimeClassGetter {
  readonly #byName: ReadonlyMap<string, RuntimeClass>;

  constructor(classes: readonly RuntimeClass[] = []) {
    const byName = new Map<string, RuntimeClass>();
    for (const rc of classes) byName.set(rc.metadata?.name ?? '', rc);
    this.#byName = byName;
  }

  getRuntimeClass(name: string): RuntimeClass | undefined {
    return this.#byName.get(name);
  }

  /** Every RuntimeClass, by name. */
  get names(): readonly string[] {
    return [...this.#byName.keys()].sort();
  }
}

/** Upstream's RuntimeClass validation, in the parts the kubelet relies on. */
function validateRuntimeClass(file: string, doc: unknown, index: number): RuntimeClass {
  const at = (field: string) => `document ${index + 1}: ${field}`;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new RuntimeClassFileError(file, `${at('<document>')}: not an object`);
  }
  const rc = doc as RuntimeClass & { apiVersion?: unknown; kind?: unknown };
  if (rc.apiVersion !== 'node.k8s.io/v1') {
    throw new RuntimeClassFileError(
      file,
      `${at('apiVersion')}: Unsupported value: ${JSON.stringify(rc.apiVersion)}: supported values: "node.k8s.io/v1"`,
    );
  }
  if (rc.kind !== 'RuntimeClass') {
    throw new RuntimeClassFileError(
      file,
      `${at('kind')}: Unsupported value: ${JSON.stringify(rc.kind)}: supported values: "RuntimeClass"`,
    );
  }
  const name = rc.metadata?.name;
  if (typeof name !== 'string' || name === '') {
    throw new RuntimeClassFileError(file, `${at('metadata.name')}: Required value: name is required`);
  }
  if (name.length > 253 || !dns1123Subdomain.test(name)) {
    throw new RuntimeClassFileError(
      file,
      `${at('metadata.name')}: Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    );
  }
  const handler = rc.handler;
  if (typeof handler !== 'string' || handler === '') {
    throw new RuntimeClassFileError(file, `${at('handler')}: Required value`);
  }
  if (handler.length > 63 || !dns1123Label.test(handler)) {
    throw new RuntimeClassFileError(
      file,
      `${at('handler')}: Invalid value: ${JSON.stringify(handler)}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`,
    );
  }
  return rc;
}

const yamlOptions = {
  version: '1.1',
  customTags: (tags: YAML.Tags) =>
    tags.filter((t) => (t as { tag?: string }).tag !== 'tag:yaml.org,2002:timestamp'),
} as const;

function parseFile(file: string): RuntimeClass[] {
  const text = fs.readFileSync(file, 'utf8');
  const docs = yaml().parseAllDocuments(text, yamlOptions);
  if (!Array.isArray(docs)) throw new RuntimeClassFileError(file, 'cannot parse');
  const out: RuntimeClass[] = [];
  docs.forEach((doc, i) => {
    const err = doc.errors[0];
    if (err)
      throw new RuntimeClassFileError(file, `document ${i + 1}: cannot parse: ${err.message.split('\n')[0]}`);
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) return;
    // A List of RuntimeClasses counts as its items.
    const items =
      typeof value === 'object' && (value as { kind?: unknown }).kind === 'RuntimeClassList'
        ? ((value as { items?: unknown[] }).items ?? [])
        : [value];
    for (const item of items) out.push(validateRuntimeClass(file, item, i));
  });
  return out;
}

/**
 * Reads RuntimeClasses (`node.k8s.io/v1`) from a file or from the `.yaml`, `.yml` and `.json`
 * files of a directory; several YAML documents per file are fine. A bad file, or one name given
 * twice, is an error naming the file and the field.
 */
export function loadRuntimeClasses(fileOrDirectory: string): LocalRuntimeClassList {
  const stat = fs.statSync(fileOrDirectory);
  const files = stat.isDirectory()
    ? fs
        .readdirSync(fileOrDirectory)
        .filter((f) => /\.(ya?ml|json)$/.test(f) && !f.startsWith('.'))
        .sort()
        .map((f) => path.join(fileOrDirectory, f))
    : [fileOrDirectory];
  const seen = new Map<string, string>();
  const classes: RuntimeClass[] = [];
  for (const file of files) {
    for (const rc of parseFile(file)) {
      const name = rc.metadata?.name ?? '';
      const first = seen.get(name);
      if (first !== undefined) {
        throw new RuntimeClassFileError(
          file,
          `metadata.name: Duplicate value: ${JSON.stringify(name)} (also in ${first})`,
        );
      }
      seen.set(name, file);
      classes.push(rc);
    }
  }
  return new LocalRuntimeClassList(classes);
}
