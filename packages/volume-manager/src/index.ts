/**
 * Desired and actual state of pod volumes, the reconciler, plugins and the atomic writer.
 *
 * @packageDocumentation
 */

export {
  AtomicWriter,
  AtomicWriterError,
  type AtomicWriterOptions,
  DATA_DIR_NAME,
  type FileProjection,
  type SetPerms,
  validatePath,
} from './atomic-writer.js';
export { CONFIGMAP_PLUGIN_NAME, ConfigMapPlugin, configMapData } from './configmap.js';
export {
  collectDownwardAPIData,
  DOWNWARD_API_PLUGIN_NAME,
  DownwardAPIPlugin,
  extractContainerResourceValue,
  extractFieldPathAsString,
  formatMap,
} from './downward-api.js';
export { EMPTY_DIR_PLUGIN_NAME, EmptyDirPlugin, memoryVolumeSize } from './empty-dir.js';
export { checkHostPathType, HOST_PATH_PLUGIN_NAME, HostPathPlugin } from './host-path.js';
export { LocalObjectGetter, type LocalObjectGetterOptions } from './local-object-getter.js';
export {
  MountError,
  type Mounter,
  type MountInfo,
  type MountMedium,
  type MountMediumInfo,
  parseMountInfo,
  SystemMounter,
  type SystemMounterOptions,
} from './mount.js';
export { PROJECTED_PLUGIN_NAME, ProjectedPlugin } from './projected.js';
export {
  DEFAULT_PROJECTION_MODE,
  type KeyedData,
  makeKeyedPayload,
  type Payload,
  ProjectionPlugin,
} from './projection.js';
export { SECRET_PLUGIN_NAME, SecretPlugin, secretData } from './secret.js';
export {
  cleanPodSubPaths,
  cleanSubPaths,
  containerSubPathDirectoryName,
  getSubpathBindTarget,
  SafeSubpather,
  type SafeSubpatherOptions,
  SubPathError,
} from './subpath.js';
export {
  type FSGroupChangePolicy,
  podVolumeOwnership,
  setVolumeOwnership,
  type VolumeOwnershipOptions,
} from './volume-linux.js';
export {
  BasicVolumeManager,
  DESIRED_STATE_POPULATOR_MAX_PERIOD_MS,
  DESIRED_STATE_POPULATOR_PERIOD_MS,
  OPERATION_INITIAL_BACKOFF_MS,
  OPERATION_MAX_BACKOFF_MS,
  RECONCILER_PERIOD_MS,
  type VolumeManager,
  type VolumeManagerOptions,
  VolumeMountTimeoutError,
  type VolumePodStateProvider,
  VolumeUnmountTimeoutError,
  WAIT_FOR_ATTACH_AND_MOUNT_POLL_MS,
  WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT_MS,
  type WaitOptions,
} from './volume-manager.js';
export {
  escapePluginName,
  type HostPathDecision,
  type HostPathPolicy,
  type HostPathRequest,
  podVolumeDir,
  unescapePluginName,
  type VolumeHost,
  type VolumePlugin,
  VolumeSetUpError,
  type VolumeSpec,
} from './volume-plugin.js';

/** Package version. @public */
export const VERSION = '0.1.0';
