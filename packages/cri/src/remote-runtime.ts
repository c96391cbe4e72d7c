import { status as grpcStatus } from '@grpc/grpc-js';
import { CriError } from './errors.js';
import { runtimeServiceDefinition } from './generated/services.js';
import type {
  AttachRequest,
  AttachResponse,
  CheckpointContainerRequest,
  CheckpointContainerResponse,
  ContainerEventResponse,
  ContainerStatsRequest,
  ContainerStatsResponse,
  ContainerStatus,
  ContainerStatusRequest,
  ContainerStatusResponse,
  CreateContainerRequest,
  CreateContainerResponse,
  ExecRequest,
  ExecResponse,
  ExecSyncRequest,
  ExecSyncResponse,
  GetEventsRequest,
  ListContainerStatsRequest,
  ListContainerStatsResponse,
  ListContainersRequest,
  ListContainersResponse,
  ListMetricDescriptorsRequest,
  ListMetricDescriptorsResponse,
  ListPodSandboxMetricsRequest,
  ListPodSandboxMetricsResponse,
  ListPodSandboxRequest,
  ListPodSandboxResponse,
  ListPodSandboxStatsRequest,
  ListPodSandboxStatsResponse,
  PodSandboxStatsRequest,
  PodSandboxStatsResponse,
  PodSandboxStatus,
  PodSandboxStatusRequest,
  PodSandboxStatusResponse,
  PortForwardRequest,
  PortForwardResponse,
  RemoveContainerRequest,
  RemoveContainerResponse,
  RemovePodSandboxRequest,
  RemovePodSandboxResponse,
  ReopenContainerLogRequest,
  ReopenContainerLogResponse,
  RunPodSandboxRequest,
  RunPodSandboxResponse,
  RuntimeConfigRequest,
  RuntimeConfigResponse,
  StartContainerRequest,
  StartContainerResponse,
  StatusRequest,
  StatusResponse,
  StopContainerRequest,
  StopContainerResponse,
  StopPodSandboxRequest,
  StopPodSandboxResponse,
  StreamContainerStatsRequest,
  StreamContainerStatsResponse,
  StreamContainersRequest,
  StreamContainersResponse,
  StreamPodSandboxesRequest,
  StreamPodSandboxesResponse,
  StreamPodSandboxMetricsRequest,
  StreamPodSandboxMetricsResponse,
  StreamPodSandboxStatsRequest,
  StreamPodSandboxStatsResponse,
  UpdateContainerResourcesRequest,
  UpdateContainerResourcesResponse,
  UpdatePodSandboxResourcesRequest,
  UpdatePodSandboxResourcesResponse,
  UpdateRuntimeConfigRequest,
  UpdateRuntimeConfigResponse,
  VersionRequest,
  VersionResponse,
} from './generated/types.js';
import { CriConnection } from './grpc-call.js';
import type { CallOptions, CriClientOptions, PartialMessage } from './options.js';

/**
 * Promise client of the CRI v1 `RuntimeService` (upstream: `remote_runtime.go`). One method per
 * RPC, named in lowerCamelCase; requests are plain objects, responses plain objects with
 * camelCase fields and int64 values as numbers. Failures reject with {@link CriError}.
 * @public
 */
export class RuntimeServiceClient {
  readonly #conn: CriConnection;
  /** The endpoint this client dials. */
  readonly endpoint: string;

  constructor(options: CriClientOptions) {
    this.#conn = new CriConnection(runtimeServiceDefinition, options);
    this.endpoint = options.endpoint;
  }

  /**
   * Version returns the runtime name, runtime version, and runtime API version.
   */
  version(request: PartialMessage<VersionRequest> = {}, options?: CallOptions): Promise<VersionResponse> {
    return this.#conn.unary('Version', request, options, this.#conn.defaultTimeoutMs, verifyVersion);
  }

  /**
   * RunPodSandbox creates and starts a pod-level sandbox. Runtimes must ensure
   * the sandbox is in the ready state on success.
   */
  runPodSandbox(
    request: PartialMessage<RunPodSandboxRequest>,
    options?: CallOptions,
  ): Promise<RunPodSandboxResponse> {
    // As upstream: sandbox creation gets twice the default deadline (4 min by default).
    return this.#conn.unary('RunPodSandbox', request, options, 2 * this.#conn.defaultTimeoutMs, (res) =>
      res.podSandboxId
        ? undefined
        : `runtime returned no PodSandboxId for sandbox ${JSON.stringify(request.config?.metadata ?? {})}`,
    );
  }

  /**
   * StopPodSandbox stops any running process that is part of the sandbox and
   * reclaims network resources (e.g., IP addresses) allocated to the sandbox.
   * If there are any running containers in the sandbox, they must be forcibly
   * terminated.
   * This call is idempotent, and must not return an error if all relevant
   * resources have already been reclaimed. kubelet will call StopPodSandbox
   * at least once before calling RemovePodSandbox. It will also attempt to
   * reclaim resources eagerly, as soon as a sandbox is not needed. Hence,
   * multiple StopPodSandbox calls are expected.
   */
  stopPodSandbox(
    request: PartialMessage<StopPodSandboxRequest>,
    options?: CallOptions,
  ): Promise<StopPodSandboxResponse> {
    return this.#conn.unary('StopPodSandbox', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * RemovePodSandbox removes the sandbox. If there are any running containers
   * in the sandbox, they must be forcibly terminated and removed.
   * This call is idempotent, and must not return an error if the sandbox has
   * already been removed.
   */
  removePodSandbox(
    request: PartialMessage<RemovePodSandboxRequest>,
    options?: CallOptions,
  ): Promise<RemovePodSandboxResponse> {
    return this.#conn.unary('RemovePodSandbox', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * PodSandboxStatus returns the status of the PodSandbox. If the PodSandbox is not
   * present, returns an error.
   */
  podSandboxStatus(
    request: PartialMessage<PodSandboxStatusRequest>,
    options?: CallOptions,
  ): Promise<PodSandboxStatusResponse> {
    return this.#conn.unary(
      'PodSandboxStatus',
      request,
      options,
      this.#conn.defaultTimeoutMs,
      verifySandboxStatusResponse,
    );
  }

  /**
   * ListPodSandbox returns a list of PodSandboxes.
   */
  listPodSandbox(
    request: PartialMessage<ListPodSandboxRequest> = {},
    options?: CallOptions,
  ): Promise<ListPodSandboxResponse> {
    return this.#conn.unary('ListPodSandbox', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StreamPodSandboxes returns a stream of PodSandboxes.
   * This is an alternative to ListPodSandbox that streams results in lists
   * of at least one item, avoiding the gRPC message size limit for nodes with
   * many pods. The number of items per list may vary depending on the
   * container runtime. Each item must appear in exactly one response and must
   * not be duplicated across responses in the same stream. The server must
   * close the stream with EOF after all items have been sent. The kubelet
   * collects all items from the stream and processes them all at once after
   * the stream completes. The kubelet enforces a timeout on the entire stream
   * and will discard partial results if the stream is not completed in time.
   * Feature gate: CRIListStreaming
   * See https://kep.k8s.io/5825 for more details.
   */
  streamPodSandboxes(
    request: PartialMessage<StreamPodSandboxesRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<StreamPodSandboxesResponse> {
    return this.#conn.stream('StreamPodSandboxes', request, options, this.#conn.defaultTimeoutMs, false);
  }

  /**
   * CreateContainer creates a new container in specified PodSandbox
   */
  createContainer(
    request: PartialMessage<CreateContainerRequest>,
    options?: CallOptions,
  ): Promise<CreateContainerResponse> {
    return this.#conn.unary('CreateContainer', request, options, this.#conn.defaultTimeoutMs, (res) =>
      res.containerId
        ? undefined
        : `runtime returned no ContainerId for container ${JSON.stringify(request.config?.metadata ?? {})}`,
    );
  }

  /**
   * StartContainer starts the container.
   */
  startContainer(
    request: PartialMessage<StartContainerRequest>,
    options?: CallOptions,
  ): Promise<StartContainerResponse> {
    return this.#conn.unary('StartContainer', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StopContainer stops a running container with a grace period (i.e., timeout).
   * This call is idempotent, and must not return an error if the container has
   * already been stopped.
   * The runtime must forcibly kill the container after the grace period is
   * reached.
   */
  stopContainer(
    request: PartialMessage<StopContainerRequest>,
    options?: CallOptions,
  ): Promise<StopContainerResponse> {
    // As upstream: the grace period is added to the request timeout.
    return this.#conn.unary(
      'StopContainer',
      request,
      options,
      this.#conn.defaultTimeoutMs + secondsMs(request.timeout),
    );
  }

  /**
   * RemoveContainer removes the container. If the container is running, the
   * container must be forcibly removed.
   * This call is idempotent, and must not return an error if the container has
   * already been removed.
   */
  removeContainer(
    request: PartialMessage<RemoveContainerRequest>,
    options?: CallOptions,
  ): Promise<RemoveContainerResponse> {
    return this.#conn.unary('RemoveContainer', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ListContainers lists all containers by filters.
   */
  listContainers(
    request: PartialMessage<ListContainersRequest> = {},
    options?: CallOptions,
  ): Promise<ListContainersResponse> {
    return this.#conn.unary('ListContainers', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StreamContainers returns a stream of containers.
   * This is an alternative to ListContainers that streams results in lists
   * of at least one item, avoiding the gRPC message size limit for nodes with
   * many containers. The number of items per list may vary depending on the
   * container runtime. Each item must appear in exactly one response and must
   * not be duplicated across responses in the same stream. The server must
   * close the stream with EOF after all items have been sent. The kubelet
   * collects all items from the stream and processes them all at once after
   * the stream completes. The kubelet enforces a timeout on the entire stream
   * and will discard partial results if the stream is not completed in time.
   * Feature gate: CRIListStreaming
   * See https://kep.k8s.io/5825 for more details.
   */
  streamContainers(
    request: PartialMessage<StreamContainersRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<StreamContainersResponse> {
    return this.#conn.stream('StreamContainers', request, options, this.#conn.defaultTimeoutMs, false);
  }

  /**
   * ContainerStatus returns status of the container. If the container is not
   * present, returns an error.
   */
  containerStatus(
    request: PartialMessage<ContainerStatusRequest>,
    options?: CallOptions,
  ): Promise<ContainerStatusResponse> {
    return this.#conn.unary(
      'ContainerStatus',
      request,
      options,
      this.#conn.defaultTimeoutMs,
      verifyContainerStatusResponse,
    );
  }

  /**
   * UpdateContainerResources updates ContainerConfig of the container synchronously.
   * If runtime fails to transactionally update the requested resources, an error is returned.
   */
  updateContainerResources(
    request: PartialMessage<UpdateContainerResourcesRequest>,
    options?: CallOptions,
  ): Promise<UpdateContainerResourcesResponse> {
    return this.#conn.unary('UpdateContainerResources', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ReopenContainerLog asks runtime to reopen the stdout/stderr log file
   * for the container. This is often called after the log file has been
   * rotated. If the container is not running, container runtime can choose
   * to either create a new log file and return nil, or return an error.
   * Once it returns error, new container log file MUST NOT be created.
   */
  reopenContainerLog(
    request: PartialMessage<ReopenContainerLogRequest>,
    options?: CallOptions,
  ): Promise<ReopenContainerLogResponse> {
    return this.#conn.unary('ReopenContainerLog', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ExecSync runs a command in a container synchronously.
   */
  execSync(request: PartialMessage<ExecSyncRequest>, options?: CallOptions): Promise<ExecSyncResponse> {
    // As upstream: the command's own timeout is added to the request timeout, and a command
    // without one (timeout 0: lifecycle hooks) gets no deadline at all.
    return this.#conn.unary(
      'ExecSync',
      request,
      options,
      request.timeout ? this.#conn.defaultTimeoutMs + secondsMs(request.timeout) : Number.POSITIVE_INFINITY,
    );
  }

  /**
   * Exec prepares a streaming endpoint to execute a command in the container.
   */
  exec(request: PartialMessage<ExecRequest>, options?: CallOptions): Promise<ExecResponse> {
    return this.#conn.unary('Exec', request, options, this.#conn.defaultTimeoutMs, verifyUrl);
  }

  /**
   * Attach prepares a streaming endpoint to attach to a running container.
   */
  attach(request: PartialMessage<AttachRequest>, options?: CallOptions): Promise<AttachResponse> {
    return this.#conn.unary('Attach', request, options, this.#conn.defaultTimeoutMs, verifyUrl);
  }

  /**
   * PortForward prepares a streaming endpoint to forward ports from a PodSandbox.
   */
  portForward(
    request: PartialMessage<PortForwardRequest>,
    options?: CallOptions,
  ): Promise<PortForwardResponse> {
    return this.#conn.unary('PortForward', request, options, this.#conn.defaultTimeoutMs, verifyUrl);
  }

  /**
   * ContainerStats returns stats of the container. If the container does not
   * exist, the call returns an error.
   */
  containerStats(
    request: PartialMessage<ContainerStatsRequest>,
    options?: CallOptions,
  ): Promise<ContainerStatsResponse> {
    return this.#conn.unary('ContainerStats', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ListContainerStats returns stats of all running containers.
   */
  listContainerStats(
    request: PartialMessage<ListContainerStatsRequest> = {},
    options?: CallOptions,
  ): Promise<ListContainerStatsResponse> {
    return this.#conn.unary('ListContainerStats', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StreamContainerStats returns a stream of container stats.
   * This is an alternative to ListContainerStats that streams results in
   * lists of at least one item, avoiding the gRPC message size limit for
   * nodes with many containers. The number of items per list may vary
   * depending on the container runtime. Each item must appear in exactly one
   * response and must not be duplicated across responses in the same stream.
   * The server must close the stream with EOF after all items have been sent.
   * The kubelet collects all items from the stream and processes them all at
   * once after the stream completes. The kubelet enforces a timeout on the
   * entire stream and will discard partial results if the stream is not
   * completed in time.
   * Feature gate: CRIListStreaming
   * See https://kep.k8s.io/5825 for more details.
   */
  streamContainerStats(
    request: PartialMessage<StreamContainerStatsRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<StreamContainerStatsResponse> {
    return this.#conn.stream('StreamContainerStats', request, options, this.#conn.defaultTimeoutMs, false);
  }

  /**
   * PodSandboxStats returns stats of the pod sandbox. If the pod sandbox does not
   * exist, the call returns an error.
   */
  podSandboxStats(
    request: PartialMessage<PodSandboxStatsRequest>,
    options?: CallOptions,
  ): Promise<PodSandboxStatsResponse> {
    return this.#conn.unary('PodSandboxStats', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ListPodSandboxStats returns stats of the pod sandboxes matching a filter.
   */
  listPodSandboxStats(
    request: PartialMessage<ListPodSandboxStatsRequest> = {},
    options?: CallOptions,
  ): Promise<ListPodSandboxStatsResponse> {
    return this.#conn.unary('ListPodSandboxStats', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StreamPodSandboxStats returns a stream of pod sandbox stats.
   * This is an alternative to ListPodSandboxStats that streams results in
   * lists of at least one item, avoiding the gRPC message size limit for
   * nodes with many pods. The number of items per list may vary depending on
   * the container runtime. Each item must appear in exactly one response and
   * must not be duplicated across responses in the same stream. The server
   * must close the stream with EOF after all items have been sent. The
   * kubelet collects all items from the stream and processes them all at once
   * after the stream completes. The kubelet enforces a timeout on the entire
   * stream and will discard partial results if the stream is not completed
   * in time.
   * Feature gate: CRIListStreaming
   * See https://kep.k8s.io/5825 for more details.
   */
  streamPodSandboxStats(
    request: PartialMessage<StreamPodSandboxStatsRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<StreamPodSandboxStatsResponse> {
    return this.#conn.stream('StreamPodSandboxStats', request, options, this.#conn.defaultTimeoutMs, false);
  }

  /**
   * UpdateRuntimeConfig updates the runtime configuration based on the given request.
   */
  updateRuntimeConfig(
    request: PartialMessage<UpdateRuntimeConfigRequest>,
    options?: CallOptions,
  ): Promise<UpdateRuntimeConfigResponse> {
    return this.#conn.unary('UpdateRuntimeConfig', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * Status returns the status of the runtime.
   */
  status(request: PartialMessage<StatusRequest> = {}, options?: CallOptions): Promise<StatusResponse> {
    return this.#conn.unary('Status', request, options, this.#conn.defaultTimeoutMs, (res) =>
      res.status && res.status.conditions.length >= 2
        ? undefined
        : 'runtime status lacks the RuntimeReady or NetworkReady condition',
    );
  }

  /**
   * CheckpointContainer checkpoints a container
   */
  checkpointContainer(
    request: PartialMessage<CheckpointContainerRequest>,
    options?: CallOptions,
  ): Promise<CheckpointContainerResponse> {
    const timeout = request.timeout ?? 0;
    if (timeout < 0) {
      return Promise.reject(
        new CriError({
          grpcStatus: grpcStatus.INVALID_ARGUMENT,
          details: `checkpoint timeout must not be negative, got ${timeout}`,
          method: 'CheckpointContainer',
        }),
      );
    }
    // As upstream: a timeout longer than the default becomes the deadline; a shorter one (or
    // none) is raised to the default, and the runtime is told so.
    const defaultSeconds = Math.trunc(this.#conn.defaultTimeoutMs / 1000);
    if (timeout > defaultSeconds) {
      return this.#conn.unary('CheckpointContainer', request, options, timeout * 1000);
    }
    return this.#conn.unary(
      'CheckpointContainer',
      { ...request, timeout: defaultSeconds },
      options,
      this.#conn.defaultTimeoutMs,
    );
  }

  /**
   * GetContainerEvents gets container events from the CRI runtime
   *
   * Iterate with `for await`; pass `options.signal` to stop watching.
   */
  getContainerEvents(
    request: PartialMessage<GetEventsRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<ContainerEventResponse> {
    // A watch: no deadline unless the caller sets one; aborting ends the iteration quietly.
    // containerd 1.6 answers UNIMPLEMENTED, which rejects the first `next()`.
    return this.#conn.stream('GetContainerEvents', request, options, Number.POSITIVE_INFINITY, true);
  }

  /**
   * ListMetricDescriptors gets the descriptors for the metrics that will be returned in ListPodSandboxMetrics.
   * This list should be static at startup: either the client and server restart together when
   * adding or removing metrics descriptors, or they should not change.
   * Put differently, if ListPodSandboxMetrics references a name that is not described in the initial
   * ListMetricDescriptors call, then the metric will not be broadcasted.
   */
  listMetricDescriptors(
    request: PartialMessage<ListMetricDescriptorsRequest> = {},
    options?: CallOptions,
  ): Promise<ListMetricDescriptorsResponse> {
    return this.#conn.unary('ListMetricDescriptors', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * ListPodSandboxMetrics gets pod sandbox metrics from CRI Runtime
   */
  listPodSandboxMetrics(
    request: PartialMessage<ListPodSandboxMetricsRequest> = {},
    options?: CallOptions,
  ): Promise<ListPodSandboxMetricsResponse> {
    return this.#conn.unary('ListPodSandboxMetrics', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * StreamPodSandboxMetrics returns a stream of pod sandbox metrics.
   * This is an alternative to ListPodSandboxMetrics that streams results in
   * lists of at least one item, avoiding the gRPC message size limit for
   * nodes with many pods. The number of items per list may vary depending on
   * the container runtime. Each item must appear in exactly one response and
   * must not be duplicated across responses in the same stream. The server
   * must close the stream with EOF after all items have been sent. The
   * kubelet collects all items from the stream and processes them all at once
   * after the stream completes. The kubelet enforces a timeout on the entire
   * stream and will discard partial results if the stream is not completed
   * in time.
   * Feature gate: CRIListStreaming
   * See https://kep.k8s.io/5825 for more details.
   */
  streamPodSandboxMetrics(
    request: PartialMessage<StreamPodSandboxMetricsRequest> = {},
    options?: CallOptions,
  ): AsyncIterable<StreamPodSandboxMetricsResponse> {
    return this.#conn.stream('StreamPodSandboxMetrics', request, options, this.#conn.defaultTimeoutMs, false);
  }

  /**
   * RuntimeConfig returns configuration information of the runtime.
   * A couple of notes:
   * - The RuntimeConfigRequest object is not to be confused with the contents of UpdateRuntimeConfigRequest.
   * The former is for having runtime tell Kubelet what to do, the latter vice versa.
   * - It is the expectation of the Kubelet that these fields are static for the lifecycle of the Kubelet.
   * The Kubelet will not re-request the RuntimeConfiguration after startup, and CRI implementations should
   * avoid updating them without a full node reboot.
   */
  runtimeConfig(
    request: PartialMessage<RuntimeConfigRequest> = {},
    options?: CallOptions,
  ): Promise<RuntimeConfigResponse> {
    return this.#conn.unary('RuntimeConfig', request, options, this.#conn.defaultTimeoutMs);
  }

  /**
   * UpdatePodSandboxResources synchronously updates the PodSandboxConfig with
   * the pod-level resource configuration. This method is called _after_ the
   * Kubelet reconfigures the pod-level cgroups.
   * This request is treated as best effort, and failure will not block the
   * Kubelet with proceeding with a resize.
   */
  updatePodSandboxResources(
    request: PartialMessage<UpdatePodSandboxResourcesRequest>,
    options?: CallOptions,
  ): Promise<UpdatePodSandboxResourcesResponse> {
    return this.#conn.unary('UpdatePodSandboxResources', request, options, this.#conn.defaultTimeoutMs);
  }

  /** Closes the channel; calls in flight fail with `Cancelled`/`Unavailable`. */
  close(): void {
    this.#conn.close();
  }
}

function secondsMs(seconds: number | undefined): number {
  return seconds && seconds > 0 ? seconds * 1000 : 0;
}

// Response checks of upstream's client (`remote_runtime.go`, `utils.go`): a runtime that answers
// OK with an incomplete message fails the call instead of handing the kubelet empty fields.

function verifyVersion(res: VersionResponse): string | undefined {
  const missing: string[] = [];
  if (!res.version) missing.push('Version');
  if (!res.runtimeName) missing.push('RuntimeName');
  if (!res.runtimeApiVersion) missing.push('RuntimeApiVersion');
  if (!res.runtimeVersion) missing.push('RuntimeVersion');
  return missing.length > 0 ? `VersionResponse lacks ${missing.join(', ')}` : undefined;
}

/** Only a status that is there is checked; a missing one passes (as upstream). */
function verifySandboxStatusResponse(res: PodSandboxStatusResponse): string | undefined {
  return res.status ? verifySandboxStatus(res.status) : undefined;
}

function verifySandboxStatus(status: PodSandboxStatus): string | undefined {
  if (!status.id) return 'sandbox status has no id';
  const metadata = status.metadata;
  if (!metadata) return 'sandbox status has no metadata';
  if (!metadata.name || !metadata.namespace || !metadata.uid) {
    return `sandbox status metadata ${JSON.stringify(metadata)} lacks name, namespace or uid`;
  }
  if (!status.createdAt) return 'sandbox status has no createdAt';
  return undefined;
}

function verifyContainerStatusResponse(res: ContainerStatusResponse): string | undefined {
  return res.status ? verifyContainerStatus(res.status) : undefined;
}

function verifyContainerStatus(status: ContainerStatus): string | undefined {
  if (!status.id) return 'container status has no id';
  if (!status.metadata) return 'container status has no metadata';
  if (!status.metadata.name) return `container status metadata ${JSON.stringify(status.metadata)} lacks name`;
  if (!status.createdAt) return 'container status has no createdAt';
  if (!status.image?.image) return 'container status has no image';
  if (!status.imageRef) return 'container status has no imageRef';
  return undefined;
}

function verifyUrl(res: { url: string }): string | undefined {
  return res.url ? undefined : 'runtime returned no streaming URL';
}
