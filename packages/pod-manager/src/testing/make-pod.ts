import {
  ApiserverSourceName,
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  FileSourceName,
  type Pod,
} from '@kubelet-kit/core';

/** Options of {@link makePod}. @public */
export interface MakePodOptions {
  /** Defaults to `mirrorOf`'s name, else `pod`. */
  readonly name?: string;
  /** Defaults to `mirrorOf`'s namespace, else `default`. */
  readonly namespace?: string;
  /** Defaults to `<name>-uid` (with a `-mirror` suffix for mirror pods). */
  readonly uid?: string;
  /**
   * A static pod: source `file` (or `source` when given) and a `kubernetes.io/config.hash`
   * equal to its UID, as pod-config sets it.
   */
  readonly static?: boolean;
  /** Makes a mirror pod of this static pod: same name and namespace, mirror annotation = its hash. */
  readonly mirrorOf?: Pod;
  /** The `kubernetes.io/config.source` annotation; defaults to `api` (or `file` for static pods). */
  readonly source?: string;
}

/** A minimal pod (regular, static or mirror) with the annotations the pod manager looks at. @public */
export function makePod(options: MakePodOptions = {}): Pod {
  const mirrorOf = options.mirrorOf;
  const name = options.name ?? mirrorOf?.metadata?.name ?? 'pod';
  const namespace = options.namespace ?? mirrorOf?.metadata?.namespace ?? 'default';
  const uid = options.uid ?? (mirrorOf ? `${name}-mirror-uid` : `${name}-uid`);
  const annotations: Record<string, string> = {};
  if (options.static) {
    annotations[ConfigSourceAnnotationKey] = options.source ?? FileSourceName;
    annotations[ConfigHashAnnotationKey] = uid;
  } else {
    annotations[ConfigSourceAnnotationKey] = options.source ?? ApiserverSourceName;
  }
  if (mirrorOf) {
    const hash = mirrorOf.metadata?.annotations?.[ConfigHashAnnotationKey] ?? mirrorOf.metadata?.uid ?? '';
    annotations[ConfigMirrorAnnotationKey] = hash;
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, uid, annotations },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  };
}
