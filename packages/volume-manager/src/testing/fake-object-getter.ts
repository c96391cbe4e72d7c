import type { ConfigMap, ObjectGetter, Secret } from '@kubelet-kit/core';

/**
 * ConfigMaps and Secrets held in memory; `set…`/`delete…` change them between reads.
 *
 * @public
 */
export class FakeObjectGetter implements ObjectGetter {
  readonly #objects = new Map<string, ConfigMap | Secret>();
  /** How many reads were made. */
  reads = 0;

  setConfigMap(cm: ConfigMap): void {
    this.#objects.set(`ConfigMap/${cm.metadata?.namespace ?? 'default'}/${cm.metadata?.name ?? ''}`, cm);
  }

  setSecret(secret: Secret): void {
    this.#objects.set(
      `Secret/${secret.metadata?.namespace ?? 'default'}/${secret.metadata?.name ?? ''}`,
      secret,
    );
  }

  delete(kind: 'ConfigMap' | 'Secret', namespace: string, name: string): void {
    this.#objects.delete(`${kind}/${namespace}/${name}`);
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    this.reads++;
    return this.#objects.get(`ConfigMap/${namespace}/${name}`) as ConfigMap | undefined;
  }

  async getSecret(namespace: string, name: string): Promise<Secret | undefined> {
    this.reads++;
    return this.#objects.get(`Secret/${namespace}/${name}`) as Secret | undefined;
  }
}
