import { createRequire } from 'node:module';
import type YAML from 'yaml';

let yamlModule: typeof YAML | undefined;

/**
 * The yaml package, required on first use: a process given only JSON manifests and no YAML
 * files does not load it (about 70 modules, 2 MiB of RSS). `require` gives the same module a
 * static import does (its `node` export is CommonJS).
 *
 * @internal
 */
export function yaml(): typeof YAML {
  yamlModule ??= createRequire(import.meta.url)('yaml') as typeof YAML;
  return yamlModule;
}
