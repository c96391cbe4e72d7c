// kubernetes-types marks server-set fields (uid, status, deletionTimestamp) readonly; the
// kubelet's own copies set them, so this gives a writable view of an object we own.
export type Writable<T> = { -readonly [K in keyof T]: T[K] };

export function writable<T>(value: T): Writable<T> {
  return value as Writable<T>;
}
