import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  type MethodDefinition,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
  type UntypedHandleCall,
} from '@grpc/grpc-js';
import { messageCodec } from '../codec.js';
import { type CriErrorCode, grpcStatusOf } from '../errors.js';
import { imageServiceDefinition, runtimeServiceDefinition } from '../generated/services.js';
import { type FakeImage, FakeImageService } from './fake-image-service.js';
import {
  type ExecHandler,
  type ExecMatcher,
  type ExitOptions,
  type FakeContainerUsage,
  type FakePodSandboxUsage,
  type FakeRuntimeFeatures,
  type FakeRuntimeHandler,
  FakeRuntimeService,
  type RuntimeConditionState,
  type StartedContainer,
  type StreamingCall,
} from './fake-runtime-service.js';
import { type ResponseStream, StatusError } from './status-error.js';

/** Options of {@link InMemoryCriServer.start}. @public */
export interface InMemoryCriServerOptions {
  /** Listen on a unix socket in a fresh temp directory (default) or on a loopback TCP port. */
  listen?: 'unix' | 'tcp';
  /** Source of timestamps (ms since the epoch); a `FakeClock` from `@kubelet-kit/core` fits. */
  clock?: { now(): number };
  /** Version's `runtimeName`. Default `kubelet-kit-in-memory`. */
  runtimeName?: string;
  /** Version's `runtimeVersion`. Default `0.1.0`. */
  runtimeVersion?: string;
  /** Status's RuntimeReady condition. Default true. */
  runtimeReady?: boolean;
  /** Status's NetworkReady condition. Default true. */
  networkReady?: boolean;
  /** Images present from the start. */
  images?: readonly (string | FakeImage)[];
  /** Images a PullImage can fetch (besides those already present). */
  registry?: readonly string[];
  /**
   * The image filesystem's mount point ImageFsInfo reports (default
   * `/var/lib/kubelet-kit-fake/images`); an existing directory lets a kubelet statfs it.
   */
  imageFsMountpoint?: string;
  /**
   * PullImage of an image in neither list: fail with NotFound (default, "not found" from a
   * registry), fail with Unknown (what containerd here says when no registry is reachable), or
   * succeed (the image appears).
   */
  pullUnknownImages?: 'NotFound' | 'Unknown' | 'succeed';
  /** Implement GetContainerEvents (default false: UNIMPLEMENTED, like containerd 1.6). */
  containerEvents?: boolean;
  /** Pod IPs come from this /16. Default `10.88.0.0/16` (containerd's default CNI range). */
  podSubnet?: string;
  /**
   * Exit code of a running container stopped by StopContainer. Default 143 (SIGTERM), what a
   * busybox `sh -c` container reports on the containerd here. StopPodSandbox and a forced
   * RemoveContainer always give 137 (SIGKILL, no grace period).
   */
  stopExitCode?: number;
  /** Status's `runtime_handlers` (default none, as containerd 1.6). */
  runtimeHandlers?: readonly FakeRuntimeHandler[];
  /** Status's `features` (default none, as containerd 1.6). */
  features?: FakeRuntimeFeatures;
  /**
   * Keep every call in {@link InMemoryCriServer.calls} (default true). A long-running user (a
   * simulated node) turns it off: the log would grow with every call.
   */
  recordCalls?: boolean;
}

/** One RPC the server received. @public */
export interface CallRecord<T = unknown> {
  service: 'RuntimeService' | 'ImageService';
  /** The RPC name, e.g. `RunPodSandbox`. */
  method: string;
  /** The decoded request (camelCase, every scalar present). */
  request: T;
  /** `clock.now()` when it arrived. */
  at: number;
}

interface Fault {
  remaining: number;
  grpcStatus: number;
  message: string;
}

type AnyHandler = (request: unknown, stream?: ResponseStream<unknown>) => unknown;

/**
 * A real gRPC server implementing the CRI v1 RuntimeService and ImageService in memory, for
 * tests. Start it with {@link InMemoryCriServer.start}, point a client at `endpoint`, and
 * `close()` it afterwards.
 * @public
 */
export class InMemoryCriServer {
  /** The CRI endpoint to dial (`unix:///…/cri.sock` or `tcp://127.0.0.1:<port>`). */
  readonly endpoint: string;
  readonly #server: Server;
  readonly #runtime: FakeRuntimeService;
  readonly #images: FakeImageService;
  readonly #now: () => number;
  readonly #tempDir: string | undefined;
  readonly #calls: CallRecord[] = [];
  readonly #faults = new Map<string, Fault[]>();
  readonly #latency = new Map<string, number>();
  readonly #active = new Set<AbortController>();
  #closed = false;
  #recordCalls = true;

  private constructor(parts: {
    endpoint: string;
    server: Server;
    runtime: FakeRuntimeService;
    images: FakeImageService;
    now: () => number;
    tempDir: string | undefined;
  }) {
    this.endpoint = parts.endpoint;
    this.#server = parts.server;
    this.#runtime = parts.runtime;
    this.#images = parts.images;
    this.#now = parts.now;
    this.#tempDir = parts.tempDir;
  }

  /** Starts a server; resolves once it listens. */
  static async start(options: InMemoryCriServerOptions = {}): Promise<InMemoryCriServer> {
    const clock = options.clock;
    const now = clock ? () => clock.now() : () => Date.now();
    const images = new FakeImageService({
      images: options.images ?? [],
      registry: options.registry ?? [],
      pullUnknownImages: options.pullUnknownImages ?? 'NotFound',
      ...(options.imageFsMountpoint !== undefined ? { imageFsMountpoint: options.imageFsMountpoint } : {}),
    });
    const runtime = new FakeRuntimeService({
      now,
      images,
      runtimeName: options.runtimeName ?? 'kubelet-kit-in-memory',
      runtimeVersion: options.runtimeVersion ?? '0.1.0',
      podSubnet: options.podSubnet ?? '10.88.0.0/16',
      stopExitCode: options.stopExitCode ?? 143,
    });
    runtime.conditions.RuntimeReady.status = options.runtimeReady ?? true;
    runtime.conditions.NetworkReady.status = options.networkReady ?? true;
    runtime.containerEvents = options.containerEvents ?? false;
    runtime.runtimeHandlers = (options.runtimeHandlers ?? []).map((h) => ({ ...h }));
    if (options.features) runtime.features = { ...options.features };

    const server = new Server();
    let tempDir: string | undefined;
    let address: string;
    if ((options.listen ?? 'unix') === 'unix') {
      tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-cri-'));
      address = `unix://${path.join(tempDir, 'cri.sock')}`;
    } else {
      address = '127.0.0.1:0';
    }
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(address, ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const endpoint = tempDir ? address : `tcp://127.0.0.1:${port}`;
    const instance = new InMemoryCriServer({ endpoint, server, runtime, images, now, tempDir });
    instance.#recordCalls = options.recordCalls ?? true;
    instance.#register(
      'RuntimeService',
      runtimeServiceDefinition,
      runtime.handlers() as Record<string, AnyHandler>,
    );
    instance.#register(
      'ImageService',
      imageServiceDefinition,
      images.handlers(now) as Record<string, AnyHandler>,
    );
    return instance;
  }

  #register(
    service: 'RuntimeService' | 'ImageService',
    definition: {
      service: string;
      methods: Record<string, { requestType: string; responseType: string; responseStream: boolean }>;
    },
    handlers: Record<string, AnyHandler | undefined>,
  ): void {
    const grpcDefinition: Record<string, MethodDefinition<unknown, unknown>> = {};
    const implementation: Record<string, UntypedHandleCall> = {};
    for (const [method, m] of Object.entries(definition.methods)) {
      const req = messageCodec(m.requestType);
      const resp = messageCodec(m.responseType);
      grpcDefinition[method] = {
        path: `/${definition.service}/${method}`,
        requestStream: false,
        responseStream: m.responseStream,
        requestSerialize: (value: unknown) => req.encode(value),
        requestDeserialize: (buffer: Buffer) => req.decode(buffer),
        responseSerialize: (value: unknown) => resp.encode(value),
        responseDeserialize: (buffer: Buffer) => resp.decode(buffer),
        originalName: method,
      };
      const handler = handlers[method];
      if (m.responseStream) {
        implementation[method] = ((call: ServerWritableStream<unknown, unknown>) => {
          const controller = new AbortController();
          this.#active.add(controller);
          call.on('cancelled', () => controller.abort());
          const stream: ResponseStream<unknown> = { write: (r) => call.write(r), signal: controller.signal };
          this.#dispatch(service, method, call.request, handler, stream).then(
            () => {
              this.#active.delete(controller);
              call.end();
            },
            (err: unknown) => {
              this.#active.delete(controller);
              call.emit('error', toStatus(err));
            },
          );
        }) as UntypedHandleCall;
      } else {
        implementation[method] = ((
          call: ServerUnaryCall<unknown, unknown>,
          callback: sendUnaryData<unknown>,
        ) => {
          this.#dispatch(service, method, call.request, handler, undefined).then(
            (value) => callback(null, value),
            (err: unknown) => callback(toStatus(err)),
          );
        }) as UntypedHandleCall;
      }
    }
    this.#server.addService(grpcDefinition, implementation);
  }

  async #dispatch(
    service: 'RuntimeService' | 'ImageService',
    method: string,
    request: unknown,
    handler: AnyHandler | undefined,
    stream: ResponseStream<unknown> | undefined,
  ): Promise<unknown> {
    if (this.#recordCalls) this.#calls.push({ service, method, request, at: this.#now() });
    const latency = this.#latency.get(method) ?? this.#latency.get('*') ?? 0;
    if (latency > 0) await new Promise((resolve) => setTimeout(resolve, latency));
    const faults = this.#faults.get(method);
    const fault = faults?.[0];
    if (faults && fault) {
      fault.remaining--;
      if (fault.remaining <= 0) faults.shift();
      throw new StatusError(fault.grpcStatus, fault.message);
    }
    if (!handler)
      throw new StatusError('Unimplemented', `unknown method ${method} for service runtime.v1.${service}`);
    return handler(request, stream);
  }

  // ---- call log and fault injection ----

  /** Calls received so far, oldest first; only those of `method` when given. */
  calls<T = unknown>(method?: string): CallRecord<T>[] {
    return (method ? this.#calls.filter((c) => c.method === method) : [...this.#calls]) as CallRecord<T>[];
  }

  /** Forgets the call log. */
  clearCalls(): void {
    this.#calls.length = 0;
  }

  /**
   * Makes the next `count` calls of `method` (e.g. `RunPodSandbox`) fail with `grpcStatus`
   * (a name such as `Unavailable` or a number) and `message`. Queued faults apply in order.
   */
  failNext(
    method: string,
    count: number,
    grpcStatus: CriErrorCode | number,
    message = 'injected failure',
  ): void {
    const code = typeof grpcStatus === 'number' ? grpcStatus : grpcStatusOf(grpcStatus);
    const list = this.#faults.get(method) ?? [];
    list.push({ remaining: count, grpcStatus: code, message });
    this.#faults.set(method, list);
  }

  /** Delays every call of `method` (or of every method: `'*'`) by `ms` (real time); 0 removes it. */
  setLatency(method: string, ms: number): void {
    if (ms > 0) this.#latency.set(method, ms);
    else this.#latency.delete(method);
  }

  /** Removes all injected faults and latencies. */
  clearFaults(): void {
    this.#faults.clear();
    this.#latency.clear();
  }

  // ---- runtime controls ----

  /**
   * Answers ExecSync calls matching `matcher` with `handler` (latest registration wins).
   * Unmatched calls succeed with exit code 0 and no output. Returns an unregister function.
   */
  onExec(matcher: ExecMatcher, handler: ExecHandler): () => void {
    return this.#runtime.onExec(matcher, handler);
  }

  /**
   * Base URL (`http://host:port`) of the streaming URLs Exec, Attach and PortForward answer,
   * `<base>/<exec|attach|portforward>/<token>`; a test serves them with its own HTTP server.
   */
  setStreamingUrl(base: string): void {
    this.#runtime.streamingUrl = base.replace(/\/+$/, '');
  }

  /** The Exec, Attach and PortForward calls answered so far, oldest first. */
  streamingCalls(): readonly StreamingCall[] {
    return [...this.#runtime.streamingCalls];
  }

  /**
   * Calls `listener` with each container StartContainer starts (its command, labels and
   * annotations, its sandbox's), e.g. to make it exit later with {@link InMemoryCriServer.exitContainer}.
   * Returns an unregister function.
   */
  onContainerStarted(listener: (container: StartedContainer) => void): () => void {
    return this.#runtime.onContainerStarted(listener);
  }

  /** Makes a running container exit with `exitCode` (its process "died"). */
  exitContainer(containerId: string, exitCode: number, options?: ExitOptions): void {
    this.#runtime.exitContainer(containerId, exitCode, options);
  }

  /**
   * Writes `text` as the container's termination message: into the host file of the mount
   * at the path named by the `io.kubernetes.container.terminationMessagePath` annotation
   * (default `/dev/termination-log`), as the kubelet will read it. Returns the host path.
   */
  setTerminationMessage(containerId: string, text: string): string {
    return this.#runtime.setTerminationMessage(containerId, text);
  }

  /** Appends `text` to the container's log file in CRI log format. Returns the file's path. */
  writeLog(containerId: string, stream: 'stdout' | 'stderr', text: string): string {
    return this.#runtime.writeLog(containerId, stream, text);
  }

  /**
   * Sets the usage a container reports in (List)ContainerStats and, summed, in its sandbox's
   * (List)PodSandboxStats. Only running containers and ready sandboxes are listed, as containerd.
   */
  setContainerUsage(containerId: string, usage: FakeContainerUsage): void {
    this.#runtime.setContainerUsage(containerId, usage);
  }

  /** Sets a sandbox's network and process figures in (List)PodSandboxStats. */
  setPodSandboxUsage(podSandboxId: string, usage: FakePodSandboxUsage): void {
    this.#runtime.setPodSandboxUsage(podSandboxId, usage);
  }

  /** Sets a condition reported by Status. */
  setRuntimeCondition(type: 'RuntimeReady' | 'NetworkReady', state: RuntimeConditionState): void {
    this.#runtime.conditions[type] = { ...state };
  }

  /** Sets the handlers Status reports (and RunPodSandbox accepts, when any). */
  setRuntimeHandlers(handlers: readonly FakeRuntimeHandler[]): void {
    this.#runtime.runtimeHandlers = handlers.map((h) => ({ ...h }));
  }

  /** Sets the features Status reports; undefined reports none. */
  setRuntimeFeatures(features: FakeRuntimeFeatures | undefined): void {
    this.#runtime.features = features ? { ...features } : undefined;
  }

  /** Turns GetContainerEvents on (events for container create/start/stop/delete) or off (UNIMPLEMENTED). */
  setContainerEvents(enabled: boolean): void {
    this.#runtime.containerEvents = enabled;
  }

  /** Adds an image as if it had been pulled. Returns its id. */
  addImage(image: string | FakeImage): string {
    return this.#images.add(image).id;
  }

  /** What PullImage does with an image that is neither present nor in the registry. */
  setPullUnknownImages(mode: 'NotFound' | 'Unknown' | 'succeed'): void {
    this.#images.pullUnknownImages = mode;
  }

  /** The pod CIDR last set through UpdateRuntimeConfig. */
  get podCidr(): string {
    return this.#runtime.podCidr;
  }

  /** Stops the server (ending open streams) and removes its socket directory. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#active) controller.abort();
    this.#active.clear();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, 1000);
      this.#server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (this.#tempDir) fs.rmSync(this.#tempDir, { recursive: true, force: true });
  }
}

function toStatus(err: unknown): { code: number; details: string } {
  if (err instanceof StatusError) return { code: err.grpcStatus, details: err.message };
  return { code: status.UNKNOWN, details: err instanceof Error ? err.message : String(err) };
}
