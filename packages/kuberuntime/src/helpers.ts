import type { Container, Pod, RuntimeContainerStatus, RuntimePodStatus } from '@kubelet-kit/core';

// Small pure helpers of upstream `pkg/kubelet/container/helpers.go` and
// `pkg/kubelet/kuberuntime/helpers.go`.

const fnvOffset32 = 0x811c9dc5;
const fnvPrime32 = 0x01000193;

/** Go's `json.Marshal` escapes HTML characters and the JS line separators that `JSON.stringify` leaves. */
function goJSONString(value: string): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * The container hash upstream stores in `io.kubernetes.container.hash`, as lowercase hex.
 * Upstream hashes (FNV-32a) the spew `%#v` rendering of the JSON bytes of the map
 * `{"image","name"}` (keys sorted by json.Marshal): `([]uint8)[123 34 …]`. Only name and image
 * count, since image is the only field of a pod's container that may change in place.
 * @internal
 */
export function hashContainer(container: Pick<Container, 'name' | 'image'>): string {
  const json = `{"image":${goJSONString(container.image ?? '')},"name":${goJSONString(container.name)}}`;
  // FNV over the rendering, fed byte by byte without building it: "([]uint8)[" n " " n … "]".
  let hash = fnvOffset32;
  const feed = (code: number) => {
    hash = Math.imul(hash ^ code, fnvPrime32) >>> 0;
  };
  for (let i = 0; i < spewPrefix.length; i++) feed(spewPrefix.charCodeAt(i));
  // Image references are ASCII, whose UTF-8 bytes are the char codes: skip the encoding then.
  let ascii = true;
  for (let i = 0; i < json.length && ascii; i++) ascii = json.charCodeAt(i) < 0x80;
  const bytes = ascii ? undefined : Buffer.from(json, 'utf8');
  const length = bytes ? bytes.length : json.length;
  for (let i = 0; i < length; i++) {
    if (i > 0) feed(0x20);
    const b = bytes ? bytes[i]! : json.charCodeAt(i);
    if (b >= 100) feed(0x30 + Math.floor(b / 100));
    if (b >= 10) feed(0x30 + (Math.floor(b / 10) % 10));
    feed(0x30 + (b % 10));
  }
  feed(0x5d);
  return hash.toString(16);
}

const spewPrefix = '([]uint8)[';

/** The newest status of the named container (statuses are newest first). */
export function findContainerStatusByName(
  podStatus: RuntimePodStatus,
  name: string,
): RuntimeContainerStatus | undefined {
  return podStatus.containerStatuses.find((s) => s.name === name);
}

/** `policy != Never`. */
export function shouldRestartOnFailure(pod: Pod): boolean {
  return (pod.spec?.restartPolicy ?? 'Always') !== 'Never';
}

/** The container's newest instance exited with code 0. */
export function containerSucceeded(container: Container, podStatus: RuntimePodStatus): boolean {
  const status = findContainerStatusByName(podStatus, container.name);
  return status !== undefined && status.state === 'exited' && status.exitCode === 0;
}

/** An OOM kill, a non-zero exit, or an unknown state count as an init container failure. */
export function isInitContainerFailed(status: RuntimeContainerStatus): boolean {
  if (status.reason === 'OOMKilled') return true;
  if (status.state === 'exited' && status.exitCode !== 0) return true;
  return status.state === 'unknown';
}

/** Upstream `ShouldContainerBeRestarted`. @internal */
export function shouldContainerBeRestarted(
  container: Container,
  pod: Pod,
  podStatus: RuntimePodStatus,
): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const status = findContainerStatusByName(podStatus, container.name);
  if (!status) return true;
  if (status.state === 'running') return false;
  if (status.state === 'unknown' || status.state === 'created') return true;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && status.exitCode === 0) return false;
  return true;
}

/** The crash-loop backoff key: `<podName>_<ns>_<podUID>_<containerName>_<hash>`. */
export function getStableKey(pod: Pod, container: Container): string {
  const m = pod.metadata ?? {};
  return `${m.name ?? ''}_${m.namespace ?? ''}_${m.uid ?? ''}_${container.name}_${hashContainer(container)}`;
}

/** Go's `time.Duration.String()` for whole milliseconds: `10s`, `1m20s`, `5m0s`. */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  const sec = `${Number.isInteger(s) ? s : s.toString()}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}

/** Nanoseconds (CRI timestamps) as whole milliseconds. */
export function nsToMs(ns: number): number {
  return Math.floor(ns / 1e6);
}

/** The pod as upstream's `format.Pod` prints it: `name_namespace(uid)`. */
export function podDesc(pod: Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}
