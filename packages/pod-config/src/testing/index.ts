/**
 * Test helpers for @kubelet-kit/pod-config: a source the test drives. `PodConfig` itself is in
 * memory and needs no fake; `StaticPodSource` is another programmatic source.
 *
 * @packageDocumentation
 */

export type { PodSource, PodSourceSink } from '../source.js';
export { FakePodSource } from './fake-pod-source.js';
