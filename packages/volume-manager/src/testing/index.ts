/**
 * Fakes of `@kubelet-kit/volume-manager` for callers' tests.
 *
 * @packageDocumentation
 */

export type { Mounter, MountInfo, MountMedium, MountMediumInfo } from '../mount.js';
export type { VolumeManager, WaitOptions } from '../volume-manager.js';
export { FakeMounter } from './fake-mounter.js';
export { FakeObjectGetter } from './fake-object-getter.js';
export { FakeSubpather } from './fake-subpather.js';
export { FakeTokenGetter, type FakeTokenRequestRecord } from './fake-token-getter.js';
export { FakeVolumeManager } from './fake-volume-manager.js';
