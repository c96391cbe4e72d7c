import { randomBytes } from 'node:crypto';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  type Container,
  type Logger,
  type MountedVolume,
  noopLogger,
  type Pod,
  type SeccompProfile,
  type SecurityContext,
  type Subpather,
} from '@kubelet-kit/core';
import {
  type ContainerConfig,
  type KeyValue,
  type LinuxContainerSecurityContext,
  type Mount,
  MountPropagation,
  type PartialMessage,
  SecurityProfile_ProfileType,
  type UserNamespace,
} from '@kubelet-kit/cri';
import { runtimeAppArmorProfile } from './apparmor.js';
import { type EnvContext, makeEnvironmentVariables } from './env.js';
import { ContainerConfigError } from './errors.js';
import { type HostsMountOptions, makeHostsMount } from './etc-hosts.js';
import { expand, mappingFuncFor } from './expansion.js';
import { type ContainerType, newContainerAnnotations, newContainerLabels } from './labels.js';
import { getContainerOOMScoreAdjust } from './qos.js';
import { calculateLinuxResources, type LinuxResourceOptions } from './resources.js';
import {
  buildContainerLogsDirectory,
  namespacesForPod,
  supplementalGroupsPolicyOf,
} from './sandbox-config.js';

// The CRI container config (upstream `generateContainerConfig` in `kuberuntime_container.go`,
// `kuberuntime_container_linux.go`, `security_context.go`).

const defaultMaskedPaths = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
const defaultReadonlyPaths = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** The pod's security context overlaid with the container's (upstream `DetermineEffectiveSecurityContext`). */
export function determineEffectiveSecurityContext(pod: Pod, container: Container): SecurityContext {
  const p = pod.spec?.securityContext ?? {};
  const c = container.securityContext ?? {};
  const eff: SecurityContext = {
    ...(p.runAsUser !== undefined ? { runAsUser: p.runAsUser } : {}),
    ...(p.runAsGroup !== undefined ? { runAsGroup: p.runAsGroup } : {}),
    ...(p.runAsNonRoot !== undefined ? { runAsNonRoot: p.runAsNonRoot } : {}),
    ...(p.seccompProfile ? { seccompProfile: p.seccompProfile } : {}),
    ...(p.seLinuxOptions ? { seLinuxOptions: p.seLinuxOptions } : {}),
  };
  return {
    ...eff,
    ...Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined && v !== null)),
  };
}

/** Upstream `fieldSeccompProfile`; a Localhost profile is a path under `profileRoot`. */
function seccompOf(profile: SeccompProfile | undefined, profileRoot: string) {
  switch (profile?.type) {
    case 'RuntimeDefault':
      return { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' };
    case 'Localhost':
      if (!profile.localhostProfile)
        throw new ContainerConfigError('localhostProfile must be set if seccompProfile type is Localhost.');
      return {
        profileType: SecurityProfile_ProfileType.Localhost,
        localhostRef: path.join(profileRoot, profile.localhostProfile),
      };
    default:
      // Without a profile the kubelet runs containers unconfined (SeccompDefault off).
      return { profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '' };
  }
}

/** The image's user, as ImageStatus reports it. @internal */
export interface ImageUser {
  readonly uid?: number;
  readonly username: string;
}

/** Upstream `verifyRunAsNonRoot`. */
export function verifyRunAsNonRoot(
  pod: Pod,
  container: Container,
  sc: SecurityContext,
  image: ImageUser,
): void {
  if (!sc.runAsNonRoot) return;
  const who = `pod: "${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})", container: ${container.name}`;
  if (sc.runAsUser !== undefined && sc.runAsUser !== null) {
    if (sc.runAsUser === 0)
      throw new ContainerConfigError(`container's runAsUser breaks non-root policy (${who})`);
    return;
  }
  if (image.uid !== undefined) {
    if (image.uid === 0)
      throw new ContainerConfigError(`container has runAsNonRoot and image will run as root (${who})`);
    return;
  }
  if (image.username !== '' && !/^\d+$/.test(image.username)) {
    throw new ContainerConfigError(
      `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root (${who})`,
    );
  }
}

/**
 * The container's Linux security context. `seccompProfileRoot` is where Localhost seccomp
 * profiles live (upstream `<root-dir>/seccomp`).
 */
export function convertToRuntimeSecurityContext(
  pod: Pod,
  sc: SecurityContext,
  seccompProfileRoot = '/var/lib/kubelet/seccomp',
  usernsOptions?: PartialMessage<UserNamespace>,
): PartialMessage<LinuxContainerSecurityContext> {
  const podSc = pod.spec?.securityContext;
  const policy = supplementalGroupsPolicyOf(pod);
  const supplementalGroups: number[] = [];
  if (podSc?.fsGroup !== undefined && podSc.fsGroup !== null) supplementalGroups.push(podSc.fsGroup);
  supplementalGroups.push(...(podSc?.supplementalGroups ?? []));
  // Only procMount decides the masked paths; a runtime ignores them for privileged containers.
  const unmasked = sc.procMount === 'Unmasked';
  return {
    privileged: sc.privileged === true,
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    capabilities: {
      addCapabilities: sc.capabilities?.add ?? [],
      dropCapabilities: sc.capabilities?.drop ?? [],
      addAmbientCapabilities: [],
    },
    namespaceOptions: namespacesForPod(pod, usernsOptions),
    seccomp: seccompOf(sc.seccompProfile, seccompProfileRoot),
    supplementalGroups,
    ...(policy !== undefined ? { supplementalGroupsPolicy: policy } : {}),
    maskedPaths: unmasked ? [] : defaultMaskedPaths,
    readonlyPaths: unmasked ? [] : defaultReadonlyPaths,
    ...(sc.runAsUser !== undefined && sc.runAsUser !== null ? { runAsUser: { value: sc.runAsUser } } : {}),
    ...(sc.runAsGroup !== undefined && sc.runAsGroup !== null
      ? { runAsGroup: { value: sc.runAsGroup } }
      : {}),
    ...(sc.seLinuxOptions
      ? {
          selinuxOptions: {
            user: sc.seLinuxOptions.user ?? '',
            role: sc.seLinuxOptions.role ?? '',
            type: sc.seLinuxOptions.type ?? '',
            level: sc.seLinuxOptions.level ?? '',
          },
        }
      : {}),
  };
}

/** Without runAsUser, the image's own user is passed explicitly, as upstream does. */
function withImageUser(
  sc: PartialMessage<LinuxContainerSecurityContext>,
  image: ImageUser,
): PartialMessage<LinuxContainerSecurityContext> {
  if (sc.runAsUser) return sc;
  return {
    ...sc,
    ...(image.uid !== undefined ? { runAsUser: { value: image.uid } } : {}),
    runAsUsername: image.username,
  };
}

function propagationOf(mode: string | undefined): MountPropagation {
  if (mode === 'HostToContainer') return MountPropagation.PROPAGATION_HOST_TO_CONTAINER;
  if (mode === 'Bidirectional') return MountPropagation.PROPAGATION_BIDIRECTIONAL;
  return MountPropagation.PROPAGATION_PRIVATE;
}

/** Upstream `MakeAbsolutePath` on Linux: a path is taken from the root. */
function absolutePath(p: string): string {
  return path.isAbsolute(p) ? p : path.join('/', p);
}

/** Upstream `ExpandContainerVolumeMounts`: every referenced variable must be set and non-empty. */
function expandSubPath(expr: string, env: ReadonlyMap<string, string>): string {
  const missing = new Set<string>();
  const expanded = expand(expr, (name) => {
    const value = env.get(name);
    if (!value) missing.add(name);
    return value ?? '';
  });
  if (missing.size > 0) throw new ContainerConfigError(`missing value for ${[...missing].sort().join(', ')}`);
  return expanded;
}

/** What {@link makeMounts} needs for subPaths. */
export interface MakeMountsOptions {
  /** `<rootDirectory>/pods/<uid>`: subPath bind targets go under `volume-subpaths/`. */
  readonly podDir: string;
  /** Binds subPaths safely; without it a mount with a subPath fails the container. */
  readonly subpather?: Subpather;
  readonly logger?: Logger;
}

/** Upstream `hostutil.PathExists`: follows links; an unreadable path counts as existing. */
function pathExists(p: string): boolean {
  try {
    fsSync.statSync(p);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * Container mounts from the pod's mounted volumes (upstream `makeMounts`, without /etc/hosts).
 * A subPath is never joined as text: the subpather opens it inside the volume and bind-mounts
 * what it opened, and the container gets that bind mount.
 */
export async function makeMounts(
  container: Container,
  volumes: ReadonlyMap<string, MountedVolume>,
  env: ReadonlyMap<string, string>,
  options: MakeMountsOptions,
): Promise<PartialMessage<Mount>[]> {
  const log = options.logger ?? noopLogger;
  const mounts: PartialMessage<Mount>[] = [];
  for (const [i, vm] of (container.volumeMounts ?? []).entries()) {
    const vol = volumes.get(vm.name);
    if (!vol)
      throw new ContainerConfigError(
        `cannot find volume "${vm.name}" to mount into container "${container.name}"`,
      );
    let hostPath = vol.hostPath;
    let subPath = vm.subPath ?? '';
    if (vm.subPathExpr) subPath = expandSubPath(vm.subPathExpr, env);
    if (subPath) {
      if (path.isAbsolute(subPath))
        throw new ContainerConfigError(`error SubPath \`${subPath}\` must not be an absolute path`);
      if (subPath.split('/').includes('..'))
        throw new ContainerConfigError(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
      const { subpather } = options;
      // Details stay in the log: they could tell the pod about the host's file system.
      const failed = (what: string, err: unknown) => {
        log.error(
          { container: container.name, volumeMount: vm.name, err: errorText(err) },
          `Failed to ${what} for volumeMount of the container`,
        );
        return new ContainerConfigError(
          `failed to ${what} for volumeMount "${vm.name}" of container "${container.name}"`,
        );
      };
      if (!subpather) throw failed('prepare subPath', new Error('no subpather configured'));
      const volumePath = vol.hostPath;
      const joined = path.join(volumePath, subPath);
      if (!pathExists(joined)) {
        // Made now with the volume's mode, not later by the runtime with its own (upstream).
        try {
          const perm = fsSync.statSync(volumePath).mode & 0o7777;
          await subpather.safeMakeDir(subPath, volumePath, perm);
        } catch (err) {
          throw failed('create subPath directory', err);
        }
      }
      try {
        hostPath = await subpather.prepareSafeSubpath({
          volumeMountIndex: i,
          path: joined,
          volumeName: vm.name,
          volumePath,
          podDir: options.podDir,
          containerName: container.name,
        });
      } catch (err) {
        throw failed('prepare subPath', err);
      }
    }
    mounts.push({
      containerPath: absolutePath(vm.mountPath),
      hostPath,
      readonly: vm.readOnly === true || vol.readOnly,
      selinuxRelabel: vol.selinuxRelabel === true,
      propagation: propagationOf(vm.mountPropagation),
    });
  }
  return mounts;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Everything {@link generateContainerConfig} needs besides the pod and container. @internal */
export interface ContainerConfigContext {
  readonly containerType: ContainerType;
  readonly restartCount: number;
  /** The image reference to run (the runtime's image ID). */
  readonly imageRef: string;
  readonly imageUser: ImageUser;
  readonly env: EnvContext;
  readonly volumes: ReadonlyMap<string, MountedVolume>;
  /** Binds subPaths of volume mounts; without it a mount with a subPath fails. */
  readonly subpather?: Subpather;
  readonly logger?: Logger;
  /** `<rootDirectory>/pods/<uid>`: termination message files go under `containers/<name>/`. */
  readonly podDir: string;
  readonly podLogsRootDirectory: string;
  readonly memoryCapacity: number;
  readonly resources?: LinuxResourceOptions;
  readonly extraAnnotations?: Readonly<Record<string, string>>;
  /** Mount a kubelet-managed /etc/hosts (pod IPs from `env`); omitted: none. */
  readonly etcHosts?: Omit<HostsMountOptions, 'podIPs'>;
  /** The pod's user namespace, as its sandbox has it; omitted: the node's. */
  readonly usernsOptions?: PartialMessage<UserNamespace>;
}

/** The container's AppArmor profile; a profile that cannot be built is a config error. */
function appArmorOf(pod: Pod, container: Container) {
  try {
    return runtimeAppArmorProfile(pod, container) ?? {};
  } catch (err) {
    throw new ContainerConfigError(err instanceof Error ? err.message : String(err));
  }
}

/** The config and the host file that receives the termination message. @internal */
export interface GeneratedContainerConfig {
  readonly config: PartialMessage<ContainerConfig>;
  readonly terminationMessageFile?: string;
}

/** Builds the CRI container config; creates the log directory and the termination message file. @internal */
export async function generateContainerConfig(
  pod: Pod,
  container: Container,
  ctx: ContainerConfigContext,
): Promise<GeneratedContainerConfig> {
  const m = pod.metadata ?? {};
  const sc = determineEffectiveSecurityContext(pod, container);
  verifyRunAsNonRoot(pod, container, sc, ctx.imageUser);
  const env = await makeEnvironmentVariables(pod, container, ctx.env);
  const mapping = mappingFuncFor(env);
  const mounts = await makeMounts(container, ctx.volumes, env, {
    podDir: ctx.podDir,
    ...(ctx.subpather ? { subpather: ctx.subpather } : {}),
    ...(ctx.logger ? { logger: ctx.logger } : {}),
  });
  const logDir = buildContainerLogsDirectory(
    ctx.podLogsRootDirectory,
    m.namespace ?? '',
    m.name ?? '',
    m.uid ?? '',
    container.name,
  );
  const terminationMessagePath = container.terminationMessagePath ?? '/dev/termination-log';
  const terminationMessageFile = terminationMessagePath
    ? path.join(ctx.podDir, 'containers', container.name, randomBytes(4).toString('hex'))
    : undefined;
  // The container's few file-system writes go through the thread pool, all at once: making a
  // directory or file on a disk takes 0.1 ms or more of kernel time (far more while the disk's
  // journal is busy), and on the main thread that would hold up every other pod, where
  // upstream blocks only this pod's goroutine.
  const [hosts] = await Promise.all([
    ctx.etcHosts
      ? makeHostsMount(
          pod,
          mounts.some((m) => m.containerPath === '/etc/hosts'),
          {
            ...ctx.etcHosts,
            podIPs: ctx.env.podIPs,
          },
        )
      : undefined,
    fs.mkdir(logDir, { recursive: true, mode: 0o755 }),
    terminationMessageFile ? makeTerminationMessageFile(terminationMessageFile) : undefined,
  ]);
  if (hosts) mounts.push(hosts);

  if (terminationMessageFile) {
    mounts.push({
      containerPath: path.join('/', terminationMessagePath),
      hostPath: terminationMessageFile,
      readonly: false,
      selinuxRelabel: false,
      propagation: MountPropagation.PROPAGATION_PRIVATE,
    });
  }

  const envs: KeyValue[] = [...env].map(([key, value]) => ({ key, value }));
  const config: PartialMessage<ContainerConfig> = {
    metadata: { name: container.name, attempt: ctx.restartCount },
    image: { image: ctx.imageRef, userSpecifiedImage: container.image ?? '' },
    command: (container.command ?? []).map((c) => expand(c, mapping)),
    args: (container.args ?? []).map((a) => expand(a, mapping)),
    workingDir: container.workingDir ?? '',
    envs,
    mounts,
    labels: newContainerLabels(container, pod),
    annotations: newContainerAnnotations(
      container,
      pod,
      ctx.restartCount,
      ctx.containerType,
      ctx.extraAnnotations,
    ),
    logPath: path.join(container.name, `${ctx.restartCount}.log`),
    stdin: container.stdin === true,
    stdinOnce: container.stdinOnce === true,
    tty: container.tty === true,
    linux: {
      resources: {
        ...calculateLinuxResources(container, ctx.resources),
        oomScoreAdj: getContainerOOMScoreAdjust(pod, container, ctx.memoryCapacity),
      },
      securityContext: withImageUser(
        {
          // podDir is <root-dir>/pods/<uid>; Localhost seccomp profiles live in <root-dir>/seccomp.
          ...convertToRuntimeSecurityContext(
            pod,
            sc,
            path.join(ctx.podDir, '..', '..', 'seccomp'),
            ctx.usernsOptions,
          ),
          ...appArmorOf(pod, container),
        },
        ctx.imageUser,
      ),
    },
  };
  return terminationMessageFile ? { config, terminationMessageFile } : { config };
}

/** An empty termination-message file the container's user may write, in a new directory. */
async function makeTerminationMessageFile(file: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o750 });
  await fs.writeFile(file, '', { mode: 0o666 });
  // The umask may have narrowed the mode; the container's user must be able to write.
  await fs.chmod(file, 0o666);
}
