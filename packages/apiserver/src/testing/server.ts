// An in-memory Kubernetes API server for tests, on the real wire protocol over plain HTTP:
// REST, watch, the three patch types and graceful pod deletion with upstream's semantics
// (k8s.io/apiserver pkg/endpoints/handlers and pkg/registry/generic/registry), discovery and
// server-side Tables so the real kubectl works against it, the pod subresources proxied to the
// node's kubelet, and fault hooks (dropped connections, silent watches, refused connections).

import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { type Clock, RealClock, type Timer } from '@kubelet-kit/core';
import { KubeConfig } from '@kubernetes/client-node';
import { admitPod } from './admission.js';
import {
  applyDefaults,
  bootstrapObjects,
  generateName,
  prepareForCreate,
  ROOT_CA,
  rfc3339,
} from './defaults.js';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, SERVER_VERSION } from './discovery.js';
import { unknownFields } from './fields.js';
import { openapiV2Json, openapiV2Protobuf, openapiV3Document, openapiV3Index } from './openapi.js';
import { applyPatch, type Json, type JsonObject, patchTypeOf } from './patch.js';
import {
  type KubeletClientCertificate,
  kubeletOf,
  kubeletPath,
  proxyRequest,
  proxyUpgrade,
} from './proxy.js';
import { apiVersionOf, findResource, RESOURCES, type ResourceInfo, resourceOfKind } from './resources.js';
import {
  answerAccessReview,
  answerTokenReview,
  type FakeAccessReviewHook,
  type FakeTokenReviewHook,
  ReviewInvalid,
} from './reviews.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import {
  alreadyExists,
  badRequest,
  conflict,
  expired,
  invalid,
  methodNotAllowed,
  notFound,
  pathNotFound,
  StatusError,
  serviceUnavailable,
  unsupportedMediaType,
} from './status.js';
import { metaOf, ObjectStore, type StoreEvent } from './store.js';
import { toTable, wantsTable } from './table.js';
import { validateObject } from './validation.js';

/** Object metadata as the helpers see it. @public */
export interface FakeObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: unknown[];
  [key: string]: unknown;
}

/** Any Kubernetes object, as JSON. @public */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: FakeObjectMeta;
  [key: string]: unknown;
}

/** One request the server received, for asserting what a client wrote. @public */
export interface FakeRequestRecord {
  readonly method: string;
  /** The URL path, without the query. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly userAgent: string;
  readonly contentType: string;
  readonly accept: string;
  /** The parsed JSON body, if any. */
  readonly body: unknown;
  /** The HTTP status answered (0 while a watch or proxied stream is still open). */
  status: number;
}

/** An open watch, as `silenceWatch` filters see it. @public */
export interface FakeWatchInfo {
  /** Plural resource: `pods`, `leases`. */
  readonly resource: string;
  readonly group: string;
  readonly namespace: string | undefined;
  readonly query: Readonly<Record<string, string>>;
  readonly userAgent: string;
}

/** A TokenRequest the server answered. @public */
export interface FakeIssuedToken {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly token: string;
  readonly audiences: readonly string[];
  readonly expirationTimestamp: string;
  readonly boundObjectRef?: unknown;
}

/** Options of {@link FakeApiServer}. @public */
export interface FakeApiServerOptions {
  /** Time for timestamps, watch timeouts, bookmarks and refusals. Default: the wall clock. */
  readonly clock?: Clock;
  /** Listen address. Default 127.0.0.1. */
  readonly host?: string;
  /** Listen port. Default 0 (any free port; kept across restart and refuseFor). */
  readonly port?: number;
  /** Changes kept per resource for watches to resume from; older ones get 410. Default 1000. */
  readonly historySize?: number;
  /** How often watches that allow bookmarks get one. Default 60 s (upstream: about a minute). */
  readonly bookmarkIntervalMs?: number;
  /** Check written objects against the kubernetes-models schemas if installed. Default true. */
  readonly validate?: boolean;
  /** Scheme of the kubelets pod log/exec/attach/portforward go to. Default https (any cert). */
  readonly kubeletScheme?: 'http' | 'https';
  /**
   * Serve HTTPS: with this key and certificate, or `'self-signed'` for a fresh one made with
   * the `openssl` binary (for 127.0.0.1 and localhost). The kubeconfig then carries the
   * certificate as its CA. Default: plain HTTP.
   */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer } | 'self-signed';
  /**
   * Run the pod admission of a default control plane on pods created through the API (not on
   * {@link FakeApiServer.create}): the ServiceAccount must exist (else 403), the projected
   * `kube-api-access-…` token volume is added and mounted in every container, and not-ready /
   * unreachable tolerations of 300 s. Default false: pods are stored as sent.
   */
  readonly admission?: boolean;
  /** Create the namespaces, Service and ConfigMaps a real control plane has. Default true. */
  readonly bootstrap?: boolean;
  /**
   * The client certificate shown to kubelets on log/exec/attach/portforward over https
   * (upstream --kubelet-client-certificate/--kubelet-client-key). Default: none.
   */
  readonly kubeletClientCertificate?: KubeletClientCertificate;
  /** Decides TokenReviews; default: every token is invalid. Also {@link FakeApiServer.onTokenReview}. */
  readonly tokenReview?: FakeTokenReviewHook;
  /** Decides SubjectAccessReviews; default: all allowed. Also {@link FakeApiServer.onAccessReview}. */
  readonly accessReview?: FakeAccessReviewHook;
}

/** Options of a delete through {@link FakeApiServer.delete} or DELETE. @public */
export interface FakeDeleteOptions {
  readonly gracePeriodSeconds?: number;
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
}

interface OpenWatch extends FakeWatchInfo {
  readonly res: http.ServerResponse;
  silenced: boolean;
  close(): void;
}

interface Route {
  readonly info: ResourceInfo;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly sub: string | undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: handlers read loosely typed JSON
type Obj = Record<string, any>;

/**
 * An in-memory Kubernetes API server speaking the real wire protocol, for tests.
 *
 * @example
 * ```ts
 * const api = new FakeApiServer();
 * await api.start();
 * api.writeKubeconfig('/tmp/kubeconfig');
 * // … run a client against it …
 * await api.stop();
 * ```
 * @public
 */
export class FakeApiServer {
  private readonly clock: Clock;
  private readonly host: string;
  private portNumber: number;
  private readonly bookmarkIntervalMs: number;
  private readonly validateWrites: boolean;
  private readonly kubeletScheme: 'http' | 'https';
  private readonly admission: boolean;
  private readonly store: ObjectStore;
  private server: http.Server | https.Server | undefined;
  private readonly tls: { readonly key: string | Buffer; readonly cert: string | Buffer } | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly watches = new Set<OpenWatch>();
  private readonly silencers = new Set<(w: FakeWatchInfo) => boolean>();
  private readonly fieldSelectorsIgnored = new Set<string>();
  private readonly log: FakeRequestRecord[] = [];
  private readonly issued: FakeIssuedToken[] = [];
  private tokenReviewHook: FakeTokenReviewHook | undefined;
  private readonly kubeletClient: KubeletClientCertificate | undefined;
  private accessReviewHook: FakeAccessReviewHook | undefined;
  private readonly reviews: { readonly kind: string; readonly spec: unknown; readonly status: unknown }[] =
    [];
  private nextClusterIP = 10;
  private refusing503 = false;
  private refuseTimer: Timer | undefined;

  constructor(options: FakeApiServerOptions = {}) {
    this.clock = options.clock ?? new RealClock();
    this.host = options.host ?? '127.0.0.1';
    this.portNumber = options.port ?? 0;
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
    this.validateWrites = options.validate ?? true;
    this.kubeletScheme = options.kubeletScheme ?? 'https';
    this.admission = options.admission ?? false;
    this.tokenReviewHook = options.tokenReview;
    this.kubeletClient = options.kubeletClientCertificate;
    this.accessReviewHook = options.accessReview;
    this.store = new ObjectStore(options.historySize ?? 1000);
    this.tls = options.tls === 'self-signed' ? selfSigned(this.host) : options.tls;
    if (options.bootstrap ?? true) {
      for (const { plural, obj } of bootstrapObjects()) {
        this.createSync(this.resource(plural), obj as JsonObject, true);
      }
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /** Listens; resolves once connections are accepted. */
  async start(): Promise<void> {
    if (this.server) return;
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      void this.handle(req, res);
    };
    const server = this.tls
      ? https.createServer({ key: this.tls.key, cert: this.tls.cert }, handler)
      : http.createServer(handler);
    server.keepAliveTimeout = 60_000;
    server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      this.handleUpgrade(req, socket, head);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.portNumber, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.portNumber = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Ends every watch and connection and stops listening. State is kept. */
  async stop(): Promise<void> {
    this.refuseTimer?.cancel();
    this.refuseTimer = undefined;
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.endWatches();
    const closed = new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  /** Stops and starts again on the same port, keeping every object and the history. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** The port listened on (after start). */
  get port(): number {
    return this.portNumber;
  }

  /** The server URL, `http://127.0.0.1:<port>` (https with `tls`). */
  get url(): string {
    return `${this.tls ? 'https' : 'http'}://${this.host}:${this.portNumber}`;
  }

  /** The serving certificate (PEM) with `tls`, else undefined. */
  get certificate(): string | undefined {
    return this.tls ? String(this.tls.cert) : undefined;
  }

  /** The current (global) resourceVersion. */
  get resourceVersion(): string {
    return String(this.store.resourceVersion);
  }

  // ---- kubeconfig ------------------------------------------------------------------------

  /** A kubeconfig YAML pointing at this server (plain HTTP, a bearer token that is not checked). */
  kubeconfig(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake',
      '  cluster:',
      `    server: ${this.url}`,
      // client-node refuses plain HTTP unless told to skip TLS verification.
      this.tls
        ? `    certificate-authority-data: ${Buffer.from(String(this.tls.cert)).toString('base64')}`
        : '    insecure-skip-tls-verify: true',
      'users:',
      '- name: fake',
      '  user:',
      '    token: fake-token',
      'contexts:',
      '- name: fake',
      '  context:',
      '    cluster: fake',
      '    user: fake',
      '    namespace: default',
      'current-context: fake',
      '',
    ].join('\n');
  }

  /** Writes {@link FakeApiServer.kubeconfig} to `path`; returns `path`. */
  writeKubeconfig(path: string): string {
    fs.writeFileSync(path, this.kubeconfig(), { mode: 0o600 });
    return path;
  }

  /** A client-node KubeConfig for this server. */
  makeKubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeconfig());
    return kc;
  }

  // ---- request log -----------------------------------------------------------------------

  /** Every request received since the start or the last {@link FakeApiServer.clearRequests}. */
  get requests(): readonly FakeRequestRecord[] {
    return this.log;
  }

  clearRequests(): void {
    this.log.length = 0;
  }

  /** Decides the TokenReviews from now on (undefined: every token invalid). */
  onTokenReview(hook: FakeTokenReviewHook | undefined): void {
    this.tokenReviewHook = hook;
  }

  /** Decides the SubjectAccessReviews from now on (undefined: all allowed). */
  onAccessReview(hook: FakeAccessReviewHook | undefined): void {
    this.accessReviewHook = hook;
  }

  /** The TokenReviews and SubjectAccessReviews answered, oldest first. */
  get answeredReviews(): readonly {
    readonly kind: string;
    readonly spec: unknown;
    readonly status: unknown;
  }[] {
    return this.reviews;
  }

  /** The TokenRequests answered. */
  get issuedTokens(): readonly FakeIssuedToken[] {
    return this.issued;
  }

  // ---- object helpers --------------------------------------------------------------------

  /** Creates an object directly (system metadata and defaults filled, no validation). */
  create<T = KubeObject>(obj: object): T {
    const info = this.resourceOfObject(obj as KubeObject);
    const copy = structuredClone(obj) as JsonObject;
    copy.metadata ??= {};
    const meta = copy.metadata as Obj;
    delete meta.resourceVersion;
    if (info.namespaced) meta.namespace ??= 'default';
    return this.createSync(info, copy, true) as T;
  }

  /** An object, or undefined. `kind` is a Kind, plural or short name: `Pod`, `pods`, `po`. */
  get<T = KubeObject>(kind: string, namespace: string | undefined, name: string): T | undefined {
    const info = this.resource(kind);
    const o = this.store.get(info, info.namespaced ? namespace : undefined, name);
    return o ? (structuredClone(o) as T) : undefined;
  }

  /** Every object of a kind, in one namespace or all. */
  list<T = KubeObject>(kind: string, namespace?: string): T[] {
    const info = this.resource(kind);
    return this.store.list(info, info.namespaced ? namespace : undefined) as T[];
  }

  /** Replaces an object directly, spec and status both; a set resourceVersion must match. */
  update<T = KubeObject>(obj: object): T {
    const info = this.resourceOfObject(obj as KubeObject);
    const meta = ((obj as KubeObject).metadata ?? {}) as FakeObjectMeta;
    const ns = info.namespaced ? (meta.namespace ?? 'default') : undefined;
    const cur = this.store.get(info, ns, String(meta.name));
    if (!cur) throw notFound(info, String(meta.name));
    const next = structuredClone(obj) as JsonObject;
    if (info.namespaced) (next.metadata as Obj).namespace = ns;
    return this.commitUpdate(info, cur, next, 'all') as T;
  }

  /** Deletes an object as DELETE does (graceful for pods bound to a node). Undefined if absent. */
  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    options: FakeDeleteOptions = {},
  ): KubeObject | undefined {
    const info = this.resource(kind);
    try {
      return this.deleteObject(info, info.namespaced ? namespace : undefined, name, options)
        .object as KubeObject;
    } catch (e) {
      if (e instanceof StatusError && e.code === 404) return undefined;
      throw e;
    }
  }

  /**
   * Resolves with the object once `predicate` holds for it (called with undefined while it
   * does not exist, so `(o) => !o` waits for a deletion). Rejects after `timeoutMs` (10 s).
   */
  waitFor<T = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
    predicate: (obj: T | undefined) => boolean,
    timeoutMs = 10_000,
  ): Promise<T | undefined> {
    const info = this.resource(kind);
    const ns = info.namespaced ? namespace : undefined;
    const now = this.store.get(info, ns, name) as T | undefined;
    if (predicate(now ? structuredClone(now) : undefined)) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const watcher = {
        info,
        ...(ns !== undefined ? { namespace: ns } : {}),
        onEvent: (ev: StoreEvent) => {
          if (metaOf(ev.object).name !== name) return;
          const obj = ev.type === 'DELETED' ? undefined : (structuredClone(ev.object) as T);
          if (predicate(obj)) {
            this.store.watchers.delete(watcher);
            timer.cancel();
            resolve(obj);
          }
        },
      };
      const timer = this.clock.setTimeout(() => {
        this.store.watchers.delete(watcher);
        reject(
          new Error(`waitFor ${info.plural} ${ns ? `${ns}/` : ''}${name}: timed out after ${timeoutMs} ms`),
        );
      }, timeoutMs);
      this.store.watchers.add(watcher);
    });
  }

  // ---- faults ----------------------------------------------------------------------------

  /** Ends every open watch and closes every keep-alive connection; the listener stays. */
  dropConnections(): void {
    this.endWatches();
    this.server?.closeAllConnections();
    for (const s of this.sockets) s.destroy();
  }

  /**
   * Open watches the filter matches (every watch without one), now and later, stay open and
   * get nothing: not events, not bookmarks. The returned function lifts the silence; events
   * of the silent time are not replayed.
   */
  silenceWatch(filter: (watch: FakeWatchInfo) => boolean = () => true): () => void {
    this.silencers.add(filter);
    for (const w of this.watches) if (filter(w)) w.silenced = true;
    return () => {
      this.silencers.delete(filter);
      for (const w of this.watches) w.silenced = [...this.silencers].some((f) => f(w));
    };
  }

  /**
   * Refuses service for `ms`: by default the listener closes (connection refused) and reopens
   * on the same port; with `{ status503: true }` it stays up and answers 503 to everything.
   * Resolves once refusing has begun.
   */
  async refuseFor(ms: number, options: { readonly status503?: boolean } = {}): Promise<void> {
    if (options.status503) {
      this.refusing503 = true;
      this.dropConnections();
      this.refuseTimer = this.clock.setTimeout(() => {
        this.refusing503 = false;
      }, ms);
      return;
    }
    await this.stop();
    this.refuseTimer = this.clock.setTimeout(() => {
      this.refuseTimer = undefined;
      void this.start();
    }, ms);
  }

  /**
   * Lists and watches of these resources (plurals) ignore their fieldSelector from now on, as a
   * misbehaving server or an old proxy would: for testing a client's own filtering.
   */
  ignoreFieldSelectors(...resources: string[]): void {
    for (const r of resources) this.fieldSelectorsIgnored.add(this.resource(r).plural);
  }

  /** Sends a BOOKMARK to every open watch that allows them, now. */
  sendBookmarks(): void {
    for (const w of this.watches) if (w.query.allowWatchBookmarks === 'true') this.bookmark(w);
  }

  /** Forgets the change history, as an etcd compaction: resuming watches get 410 Expired. */
  compact(): void {
    this.store.compact();
  }

  /** The open watches. */
  get openWatches(): readonly FakeWatchInfo[] {
    return [...this.watches];
  }

  // ---- internals: resources --------------------------------------------------------------

  private resource(kind: string): ResourceInfo {
    const info = resourceOfKind(kind);
    if (!info)
      throw new Error(
        `FakeApiServer: no resource "${kind}" (served: ${RESOURCES.map((r) => r.plural).join(', ')})`,
      );
    return info;
  }

  private resourceOfObject(obj: KubeObject): ResourceInfo {
    const info =
      obj.apiVersion && obj.kind
        ? resourceOfKind(obj.apiVersion, obj.kind)
        : obj.kind
          ? resourceOfKind(obj.kind)
          : undefined;
    if (!info)
      throw new Error(`FakeApiServer: no resource for apiVersion ${obj.apiVersion} kind ${obj.kind}`);
    return info;
  }

  private allocateClusterIP = (): string => {
    const n = this.nextClusterIP++;
    return `10.96.${Math.floor(n / 256) % 256}.${n % 256}`;
  };

  private now(): number {
    return this.clock.now();
  }

  /** Create without HTTP: fills metadata, stores, and seeds a new namespace's objects. */
  private createSync(info: ResourceInfo, obj: JsonObject, direct: boolean): JsonObject {
    obj.metadata ??= {};
    const meta = obj.metadata as Obj;
    obj.apiVersion = apiVersionOf(info);
    obj.kind = info.kind;
    if (!meta.name && meta.generateName) meta.name = generateName(String(meta.generateName));
    if (!meta.name)
      throw invalid(info, '', [
        {
          reason: 'FieldValueRequired',
          message: 'Required value: name or generateName is required',
          field: 'metadata.name',
        },
      ]);
    const ns = info.namespaced ? String(meta.namespace ?? 'default') : undefined;
    if (info.namespaced) {
      meta.namespace = ns;
      if (!this.store.get(this.resource('namespaces'), undefined, String(ns)))
        throw notFound(this.resource('namespaces'), String(ns));
    }
    if (this.store.get(info, ns, meta.name)) throw alreadyExists(info, meta.name);
    prepareForCreate(info, obj, this.now(), direct);
    applyDefaults(info, obj, this.allocateClusterIP);
    const out = this.store.put(info, obj);
    if (info.group === '' && info.plural === 'namespaces') this.seedNamespace(String(meta.name));
    return out;
  }

  /** What the root-CA publisher and ServiceAccount controllers create in every namespace. */
  private seedNamespace(ns: string): void {
    this.createSync(
      this.resource('configmaps'),
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kube-root-ca.crt', namespace: ns },
        data: { 'ca.crt': ROOT_CA },
      },
      true,
    );
    this.createSync(
      this.resource('serviceaccounts'),
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } },
      true,
    );
  }

  /**
   * The common tail of PUT and PATCH: keeps system metadata, keeps the status (main resource)
   * or everything but the status (the status subresource), checks the resourceVersion
   * precondition, bumps a pod's generation on a spec change, stores.
   */
  private commitUpdate(
    info: ResourceInfo,
    cur: JsonObject,
    next: JsonObject,
    part: 'main' | 'status' | 'all' | 'ephemeralcontainers',
  ): JsonObject {
    const curMeta = cur.metadata as Obj;
    next.metadata ??= {};
    const meta = next.metadata as Obj;
    const name = String(curMeta.name);
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
    }
    if (
      meta.resourceVersion !== undefined &&
      meta.resourceVersion !== '' &&
      meta.resourceVersion !== curMeta.resourceVersion
    ) {
      throw conflict(info, name);
    }
    // A uid in the body is a precondition (the kubelet's status patches carry one).
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== curMeta.uid) {
      throw conflict(
        info,
        name,
        `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${curMeta.uid}`,
      );
    }
    next.apiVersion = apiVersionOf(info);
    next.kind = info.kind;
    let out: JsonObject;
    if (part === 'status' && info.statusSubresource) {
      out = { ...structuredClone(cur), status: (next.status ?? {}) as Json };
    } else if (part === 'ephemeralcontainers') {
      out = this.ephemeralContainersUpdate(info, cur, next);
    } else {
      out = next;
      if (part === 'main' && info.statusSubresource) {
        if (cur.status !== undefined) out.status = structuredClone(cur.status);
        else delete out.status;
      }
      const m = out.metadata as Obj;
      m.name = name;
      if (info.namespaced) m.namespace = curMeta.namespace;
      m.uid = curMeta.uid;
      m.creationTimestamp = curMeta.creationTimestamp;
      if (curMeta.deletionTimestamp) {
        m.deletionTimestamp = curMeta.deletionTimestamp;
        m.deletionGracePeriodSeconds = curMeta.deletionGracePeriodSeconds;
      } else {
        delete m.deletionTimestamp;
        delete m.deletionGracePeriodSeconds;
      }
      delete m.managedFields;
      if (curMeta.generation !== undefined) {
        m.generation =
          JSON.stringify(cur.spec) === JSON.stringify(out.spec) ? curMeta.generation : curMeta.generation + 1;
      }
      applyDefaults(info, out, this.allocateClusterIP);
    }
    const outMeta = out.metadata as Obj;
    // An object waiting on finalizers goes once the last one is removed.
    if (outMeta.deletionTimestamp && !(outMeta.finalizers?.length > 0) && !this.isGracefulPod(info, out)) {
      return this.store.remove(info, info.namespaced ? outMeta.namespace : undefined, name) ?? out;
    }
    return this.store.put(info, out);
  }

  /**
   * pods/ephemeralcontainers (upstream's ephemeralContainersStrategy): only
   * spec.ephemeralContainers changes, and only by adding; an existing one may not be changed or
   * removed.
   */
  private ephemeralContainersUpdate(info: ResourceInfo, cur: JsonObject, next: JsonObject): JsonObject {
    const name = String((cur.metadata as Obj).name);
    const before: Obj[] = (cur as Obj).spec?.ephemeralContainers ?? [];
    const after: Obj[] = (next as Obj).spec?.ephemeralContainers ?? [];
    const field = 'spec.ephemeralContainers';
    for (const old of before) {
      const now = after.find((c) => c.name === old.name);
      if (!now || JSON.stringify(now) !== JSON.stringify(old)) {
        throw invalid(info, name, [
          {
            reason: 'FieldValueForbidden',
            field,
            message: `Forbidden: existing ephemeral containers ${JSON.stringify(old.name)} may not be changed`,
          },
        ]);
      }
    }
    const names = new Set<string>([
      ...(((cur as Obj).spec?.containers ?? []) as Obj[]).map((c) => String(c.name)),
      ...(((cur as Obj).spec?.initContainers ?? []) as Obj[]).map((c) => String(c.name)),
    ]);
    for (const c of after) {
      if (typeof c.name !== 'string' || c.name === '' || typeof c.image !== 'string' || c.image === '') {
        throw invalid(info, name, [
          { reason: 'FieldValueRequired', field: `${field}.name`, message: 'Required value: name and image' },
        ]);
      }
      if (names.has(c.name)) {
        throw invalid(info, name, [
          {
            reason: 'FieldValueDuplicate',
            field: `${field}.name`,
            message: `Duplicate value: ${JSON.stringify(c.name)}`,
          },
        ]);
      }
      names.add(c.name);
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      c.imagePullPolicy ??= /:latest$|^[^:]*$/.test(c.image) ? 'Always' : 'IfNotPresent';
    }
    const out = structuredClone(cur);
    (out as Obj).spec.ephemeralContainers = after;
    return out;
  }

  private isGracefulPod(info: ResourceInfo, obj: JsonObject): boolean {
    const o = obj as Obj;
    return info.group === '' && info.plural === 'pods' && (o.metadata?.deletionGracePeriodSeconds ?? 0) > 0;
  }

  /** Upstream's BeforeDelete with the pod strategy's CheckGracefulDelete. */
  private deleteObject(
    info: ResourceInfo,
    ns: string | undefined,
    name: string,
    options: FakeDeleteOptions,
  ): { object: JsonObject; deleted: boolean } {
    const cur = this.store.get(info, ns, name) as Obj | undefined;
    if (!cur) throw notFound(info, name);
    const pre = options.preconditions;
    if (pre?.uid !== undefined && pre.uid !== cur.metadata.uid) {
      throw conflict(
        info,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== cur.metadata.resourceVersion) {
      throw conflict(
        info,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`,
      );
    }
    let grace = 0;
    if (info.group === '' && info.plural === 'pods') {
      grace = options.gracePeriodSeconds ?? cur.spec?.terminationGracePeriodSeconds ?? 30;
      if (grace < 0) grace = 1;
      // Never bound to a node or already terminal: no kubelet will finish the deletion.
      const phase = cur.status?.phase;
      if (!cur.spec?.nodeName || phase === 'Succeeded' || phase === 'Failed') grace = 0;
    }
    const finalizers: unknown[] = cur.metadata.finalizers ?? [];
    const pending = cur.metadata.deletionTimestamp !== undefined;
    if (grace > 0 || finalizers.length > 0) {
      const existing: number | undefined = cur.metadata.deletionGracePeriodSeconds;
      // A second delete only ever shortens the grace period.
      const shorter = grace > 0 && (!pending || existing === undefined || grace < existing);
      if (!shorter && (grace > 0 || pending)) return { object: structuredClone(cur), deleted: false };
      const next = structuredClone(cur);
      next.metadata.deletionTimestamp = rfc3339(this.now() + grace * 1000);
      next.metadata.deletionGracePeriodSeconds = grace;
      return { object: this.store.put(info, next as JsonObject), deleted: false };
    }
    const gone = this.store.remove(info, ns, name) as JsonObject;
    if (info.group === '' && info.plural === 'namespaces') {
      for (const r of RESOURCES) {
        if (!r.namespaced) continue;
        for (const o of this.store.list(r, name)) this.store.remove(r, name, String(metaOf(o).name));
      }
    }
    return { object: gone, deleted: true };
  }

  // ---- internals: HTTP -------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const chunks: Buffer[] = [];
    const isProxy = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/(log|exec|attach|portforward)$/.test(
      url.pathname,
    );
    if (!isProxy) {
      for await (const c of req) chunks.push(c as Buffer);
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    let bodyError: string | undefined;
    if (raw.trim() !== '') {
      try {
        body = JSON.parse(raw);
      } catch (e) {
        bodyError = (e as Error).message;
      }
    }
    const record: FakeRequestRecord = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      userAgent: String(req.headers['user-agent'] ?? ''),
      contentType: String(req.headers['content-type'] ?? ''),
      accept: String(req.headers.accept ?? ''),
      body,
      status: 0,
    };
    this.log.push(record);
    const send = (code: number, obj: unknown) => {
      record.status = code;
      if (res.headersSent || res.destroyed) return;
      res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
      res.end(JSON.stringify(obj));
    };
    try {
      if (this.refusing503) throw serviceUnavailable();
      if (bodyError)
        throw badRequest(`the object provided is unrecognized (must be of type JSON): ${bodyError}`);
      await this.route(req, res, url, body, send, record);
    } catch (e) {
      if (e instanceof StatusError) send(e.code, e.toStatus());
      else
        send(500, new StatusError(500, 'InternalError', `Internal error occurred: ${String(e)}`).toStatus());
    }
  }

  private async route(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    body: unknown,
    send: (code: number, obj: unknown) => void,
    record: FakeRequestRecord,
  ): Promise<void> {
    const p = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (p === '/version') return send(200, SERVER_VERSION);
    if (p === '/healthz' || p === '/livez' || p === '/readyz') {
      record.status = 200;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (p === '/api') return send(200, apiVersions(`${this.host}:${this.portNumber}`));
    if (p === '/apis') return send(200, apiGroupList());
    if (p === '/openapi/v3') return send(200, openapiV3Index());
    if (p === '/openapi/v2') {
      if (!/protobuf/.test(String(req.headers.accept ?? ''))) return send(200, openapiV2Json());
      record.status = 200;
      res.writeHead(200, { 'content-type': 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
      res.end(openapiV2Protobuf());
      return;
    }
    const oa = /^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)$/.exec(p);
    if (oa) {
      const doc = openapiV3Document(oa[1] as string);
      return doc ? send(200, doc) : send(404, pathNotFound().toStatus());
    }
    const seg = p
      .split('/')
      .filter((s) => s !== '')
      .map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (seg[0] === 'api' && seg[1] === 'v1') {
      group = '';
      version = 'v1';
      rest = seg.slice(2);
    } else if (seg[0] === 'apis' && seg.length >= 2) {
      group = seg[1] as string;
      if (seg.length === 2) {
        const g = apiGroup(group);
        return g ? send(200, g) : send(404, pathNotFound().toStatus());
      }
      version = seg[2] as string;
      rest = seg.slice(3);
    } else {
      return send(404, pathNotFound().toStatus());
    }
    if (rest.length === 0) {
      const list = apiResourceList(group, version);
      return list ? send(200, list) : send(404, pathNotFound().toStatus());
    }
    const review =
      group === 'authentication.k8s.io' && version === 'v1' && rest.length === 1 && rest[0] === 'tokenreviews'
        ? 'token'
        : group === 'authorization.k8s.io' &&
            version === 'v1' &&
            rest.length === 1 &&
            rest[0] === 'subjectaccessreviews'
          ? 'access'
          : undefined;
    if (review) {
      if (method !== 'POST') throw methodNotAllowed();
      let answer: Obj;
      try {
        answer =
          review === 'token'
            ? answerTokenReview(body, this.tokenReviewHook)
            : answerAccessReview(body, this.accessReviewHook);
      } catch (err) {
        if (err instanceof ReviewInvalid) throw badRequest(err.message);
        throw err;
      }
      this.reviews.push({ kind: answer.kind, spec: answer.spec, status: answer.status });
      return send(201, answer);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const info = findResource(group, version, rest[0] as string);
    if (!info || rest.length > 3 || (namespace !== undefined && !info.namespaced)) {
      return send(404, pathNotFound().toStatus());
    }
    const route: Route = { info, namespace, name: rest[1], sub: rest[2] };
    if (
      route.sub &&
      route.sub !== 'status' &&
      !info.subresources.some((s) => s.name === route.sub) &&
      route.sub !== 'binding'
    ) {
      return send(404, pathNotFound().toStatus());
    }
    if (route.sub === 'status' && !info.statusSubresource) return send(404, pathNotFound().toStatus());
    if (info.namespaced && route.name !== undefined && namespace === undefined)
      return send(404, pathNotFound().toStatus());
    const q = url.searchParams;

    if (info.plural === 'pods' && route.sub && ['log', 'exec', 'attach', 'portforward'].includes(route.sub)) {
      const target = this.kubeletTarget(route, q);
      proxyRequest(req, res, target, this.kubeletScheme, this.kubeletClient);
      res.on('finish', () => {
        record.status = res.statusCode;
      });
      return;
    }
    switch (method) {
      case 'GET': {
        if (route.name === undefined) {
          if (q.get('watch') === 'true' || q.get('watch') === '1')
            return this.serveWatch(req, res, route, q, record);
          return send(200, this.listResponse(route, q, String(req.headers.accept ?? '')));
        }
        const obj = this.store.get(info, namespace, route.name);
        if (!obj) throw notFound(info, route.name);
        if (wantsTable(req.headers.accept)) {
          return send(
            200,
            toTable(info, [obj], String(metaOf(obj).resourceVersion), this.now(), q.get('includeObject')),
          );
        }
        return send(200, obj);
      }
      case 'POST': {
        if (route.name === undefined) return send(201, await this.httpCreate(route, body, q, res));
        if (route.sub === 'token' && info.plural === 'serviceaccounts') {
          return send(201, this.tokenRequest(String(namespace), route.name, body as Obj | undefined));
        }
        if (route.sub === 'binding' && info.plural === 'pods') {
          return send(201, this.bind(String(namespace), route.name, body as Obj | undefined));
        }
        throw methodNotAllowed();
      }
      case 'PUT': {
        if (route.name === undefined) throw methodNotAllowed();
        return send(200, await this.httpReplace(route, body, q, res));
      }
      case 'PATCH': {
        if (route.name === undefined) throw methodNotAllowed();
        const type = patchTypeOf(req.headers['content-type']);
        if (!type) throw unsupportedMediaType(String(req.headers['content-type'] ?? ''));
        const { code, obj } = await this.httpPatch(route, type, body, q, res);
        return send(code, obj);
      }
      case 'DELETE': {
        const opts = this.deleteOptions(body as Obj | undefined, q);
        if (route.name === undefined) {
          const items = this.selected(route, q);
          const out: JsonObject[] = [];
          for (const o of items)
            out.push(this.deleteObject(info, namespace, String(metaOf(o).name), opts).object);
          return send(200, {
            kind: `${info.kind}List`,
            apiVersion: apiVersionOf(info),
            metadata: { resourceVersion: this.resourceVersion },
            items: out.map(stripTypeMeta),
          });
        }
        if (q.get('dryRun') === 'All') {
          const o = this.store.get(info, namespace, route.name);
          if (!o) throw notFound(info, route.name);
          return send(200, o);
        }
        const { object, deleted } = this.deleteObject(info, namespace, route.name, opts);
        if (!deleted || info.returnDeletedObject) return send(200, object);
        return send(200, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: {
            name: route.name,
            ...(info.group ? { group: info.group } : {}),
            kind: info.plural,
            uid: metaOf(object).uid,
          },
        });
      }
      default:
        throw methodNotAllowed();
    }
  }

  private kubeletTarget(route: Route, q: URLSearchParams) {
    const pod = this.store.get(route.info, route.namespace, String(route.name));
    if (!pod) throw notFound(route.info, String(route.name));
    const nodeName = (pod as Obj).spec?.nodeName;
    const node = nodeName ? this.store.get(this.resource('nodes'), undefined, nodeName) : undefined;
    const path = kubeletPath(String(route.namespace), String(route.name), String(route.sub), q) as string;
    return kubeletOf(pod, node, path);
  }

  private handleUpgrade(req: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/.exec(url.pathname);
    this.log.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      userAgent: String(req.headers['user-agent'] ?? ''),
      contentType: String(req.headers['content-type'] ?? ''),
      accept: String(req.headers.accept ?? ''),
      body: undefined,
      status: 101,
    });
    const fail = (e: StatusError) => {
      const text = JSON.stringify(e.toStatus());
      socket.end(
        `HTTP/1.1 ${e.code} ${e.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
    };
    if (!m || this.refusing503) {
      fail(this.refusing503 ? serviceUnavailable() : pathNotFound());
      return;
    }
    try {
      const route: Route = {
        info: this.resource('pods'),
        namespace: decodeURIComponent(m[1] as string),
        name: decodeURIComponent(m[2] as string),
        sub: m[3],
      };
      proxyUpgrade(
        req,
        socket,
        head,
        this.kubeletTarget(route, url.searchParams),
        this.kubeletScheme,
        this.kubeletClient,
      );
    } catch (e) {
      fail(e instanceof StatusError ? e : new StatusError(500, 'InternalError', String(e)));
    }
  }

  private selected(route: Route, q: URLSearchParams): JsonObject[] {
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = this.fieldSelectorsIgnored.has(route.info.plural)
      ? () => true
      : parseFieldSelector(q.get('fieldSelector'), route.info.fields, route.info.kind);
    return this.store
      .list(route.info, route.namespace)
      .filter((o) => labels((metaOf(o).labels ?? {}) as Record<string, string>) && fields(o));
  }

  private listResponse(route: Route, q: URLSearchParams, accept: string): JsonObject {
    const info = route.info;
    let items = this.selected(route, q);
    const rv = this.resourceVersion;
    let cont: string | undefined;
    let remaining: number | undefined;
    const token = q.get('continue');
    let start = 0;
    if (token) {
      try {
        const t = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { start: number };
        start = t.start;
      } catch {
        throw badRequest('continue key is not valid: illegal base64 data');
      }
    }
    const limit = Number(q.get('limit') ?? 0);
    items = items.slice(start);
    if (limit > 0 && items.length > limit) {
      remaining = items.length - limit;
      items = items.slice(0, limit);
      cont = Buffer.from(JSON.stringify({ start: start + limit, rv })).toString('base64');
    }
    if (wantsTable(accept)) return toTable(info, items, rv, this.now(), q.get('includeObject'));
    return {
      kind: `${info.kind}List`,
      apiVersion: apiVersionOf(info),
      metadata: {
        resourceVersion: rv,
        ...(cont ? { continue: cont, remainingItemCount: remaining ?? 0 } : {}),
      },
      items: items.map(stripTypeMeta),
    };
  }

  private serveWatch(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: Route,
    q: URLSearchParams,
    record: FakeRequestRecord,
  ): void {
    const info = route.info;
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = this.fieldSelectorsIgnored.has(info.plural)
      ? () => true
      : parseFieldSelector(q.get('fieldSelector'), info.fields, info.kind);
    const matches = (o: JsonObject | undefined) =>
      o !== undefined && labels((metaOf(o).labels ?? {}) as Record<string, string>) && fields(o);
    const rvParam = q.get('resourceVersion') ?? '';
    const sendInitial = q.get('sendInitialEvents') === 'true';
    const table = wantsTable(req.headers.accept);
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    record.status = 200;
    const write = (type: string, object: unknown) => {
      if (res.writableEnded || res.destroyed) return;
      const obj =
        table && type !== 'ERROR' && type !== 'BOOKMARK'
          ? toTable(
              info,
              [object as JsonObject],
              String(metaOf(object as JsonObject).resourceVersion),
              this.now(),
              q.get('includeObject'),
            )
          : object;
      res.write(`${JSON.stringify({ type, object: obj })}\n`);
    };
    const deliver = (w: OpenWatch, ev: StoreEvent) => {
      if (w.silenced) return;
      const now = matches(ev.object);
      const before = ev.type === 'MODIFIED' ? matches(ev.old) : ev.type === 'DELETED';
      if (ev.type === 'ADDED' && now) write('ADDED', ev.object);
      else if (ev.type === 'DELETED' && matches(ev.object)) write('DELETED', ev.object);
      else if (ev.type === 'MODIFIED') {
        if (now && before) write('MODIFIED', ev.object);
        else if (now) write('ADDED', ev.object);
        else if (before) write('DELETED', ev.object);
      }
    };
    const timers: Timer[] = [];
    const watch: OpenWatch = {
      resource: info.plural,
      group: info.group,
      namespace: route.namespace,
      query: Object.fromEntries(q),
      userAgent: String(req.headers['user-agent'] ?? ''),
      res,
      silenced: false,
      close: () => {
        for (const t of timers) t.cancel();
        this.store.watchers.delete(storeWatcher);
        this.watches.delete(watch);
        if (!res.writableEnded) res.end();
      },
    };
    const storeWatcher = {
      info,
      ...(route.namespace !== undefined ? { namespace: route.namespace } : {}),
      onEvent: (ev: StoreEvent) => deliver(watch, ev),
    };
    watch.silenced = [...this.silencers].some((f) => f(watch));
    if (rvParam === '' || rvParam === '0' || sendInitial) {
      for (const o of this.store.list(info, route.namespace))
        if (matches(o) && !watch.silenced) write('ADDED', o);
      if (sendInitial && watch.query.allowWatchBookmarks === 'true') {
        write('BOOKMARK', {
          kind: info.kind,
          apiVersion: apiVersionOf(info),
          metadata: {
            resourceVersion: this.resourceVersion,
            annotations: { 'k8s.io/initial-events-end': 'true' },
          },
        });
      }
    } else {
      const from = Number(rvParam);
      if (!Number.isInteger(from) || from < 0) {
        write('ERROR', badRequest(`invalid resource version: ${rvParam}`).toStatus());
        res.end();
        return;
      }
      const events = this.store.since(info, from);
      if (!events) {
        write(
          'ERROR',
          expired(`too old resource version: ${from} (${this.store.oldestWatchable(info) + 1})`).toStatus(),
        );
        res.end();
        return;
      }
      for (const ev of events) {
        if (route.namespace === undefined || metaOf(ev.object).namespace === route.namespace)
          deliver(watch, ev);
      }
    }
    this.store.watchers.add(storeWatcher);
    this.watches.add(watch);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    if (timeout > 0) timers.push(this.clock.setTimeout(() => watch.close(), timeout * 1000));
    if (watch.query.allowWatchBookmarks === 'true') {
      timers.push(this.clock.setInterval(() => this.bookmark(watch), this.bookmarkIntervalMs));
    }
    res.on('close', () => watch.close());
  }

  private bookmark(w: OpenWatch): void {
    if (w.silenced || w.res.writableEnded) return;
    const info = findResource(
      w.group,
      RESOURCES.find((r) => r.group === w.group)?.version ?? 'v1',
      w.resource,
    );
    if (!info) return;
    w.res.write(
      `${JSON.stringify({ type: 'BOOKMARK', object: { kind: info.kind, apiVersion: apiVersionOf(info), metadata: { resourceVersion: this.resourceVersion } } })}\n`,
    );
  }

  private endWatches(): void {
    for (const w of [...this.watches]) w.close();
  }

  /**
   * Schema checks, and the unknown fields as `fieldValidation` asks: Strict fails with 400,
   * Warn (the default) answers with Warning headers, Ignore says nothing.
   */
  private async checked(
    info: ResourceInfo,
    obj: JsonObject,
    q: URLSearchParams,
    res: http.ServerResponse,
  ): Promise<void> {
    if (!this.validateWrites) return;
    const mode = q.get('fieldValidation') ?? 'Warn';
    if (mode !== 'Ignore') {
      const unknown = unknownFields(info, obj);
      if (unknown.length > 0 && mode === 'Strict') {
        throw badRequest(`strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`);
      }
      if (unknown.length > 0) {
        res.setHeader(
          'Warning',
          unknown.map((f) => `299 - "unknown field \\"${f}\\""`),
        );
      }
    }
    await validateObject(info, obj);
  }

  private async httpCreate(
    route: Route,
    body: unknown,
    q: URLSearchParams,
    res: http.ServerResponse,
  ): Promise<JsonObject> {
    const info = route.info;
    if (!isObject(body)) throw badRequest('the object provided is unrecognized (must be of type JSON)');
    const obj = structuredClone(body) as JsonObject;
    // A body without kind and apiVersion takes the URL's, as upstream's decoder defaults them.
    if ((obj.kind && obj.kind !== info.kind) || (obj.apiVersion && obj.apiVersion !== apiVersionOf(info))) {
      throw badRequest(
        `the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersionOf(info)})`,
      );
    }
    obj.metadata ??= {};
    const meta = obj.metadata as Obj;
    if (info.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== route.namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      if (route.namespace === undefined) throw methodNotAllowed();
      meta.namespace = route.namespace;
    }
    if (meta.resourceVersion) throw badRequest('resourceVersion should not be set on objects to be created');
    if (this.admission && info.group === '' && info.plural === 'pods') {
      admitPod(obj, (ns, name) => this.store.get(this.resource('serviceaccounts'), ns, name) !== undefined);
    }
    await this.checked(info, obj, q, res);
    if (q.get('dryRun') === 'All') {
      const copy = structuredClone(obj);
      prepareForCreate(info, copy, this.now());
      applyDefaults(info, copy, () => '10.96.0.0');
      return copy;
    }
    return this.createSync(info, obj, false);
  }

  private async httpReplace(
    route: Route,
    body: unknown,
    q: URLSearchParams,
    res: http.ServerResponse,
  ): Promise<JsonObject> {
    const info = route.info;
    const name = String(route.name);
    if (!isObject(body)) throw badRequest('the object provided is unrecognized (must be of type JSON)');
    const obj = structuredClone(body) as JsonObject;
    const cur = this.store.get(info, route.namespace, name);
    if (!cur) {
      if (!info.createOnUpdate || route.sub) throw notFound(info, name);
      return this.httpCreate(route, body, q, res);
    }
    await this.checked(info, obj, q, res);
    if (q.get('dryRun') === 'All') return obj;
    return this.commitUpdate(info, cur, obj, subresourcePart(route.sub));
  }

  private async httpPatch(
    route: Route,
    type: ReturnType<typeof patchTypeOf> & string,
    body: unknown,
    q: URLSearchParams,
    res: http.ServerResponse,
  ): Promise<{ code: number; obj: JsonObject }> {
    const info = route.info;
    const name = String(route.name);
    const cur = this.store.get(info, route.namespace, name);
    if (!cur) {
      if (type === 'apply' && !route.sub) {
        if (!q.get('fieldManager'))
          throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be set');
        const obj = structuredClone(body) as JsonObject;
        obj.metadata ??= {};
        const meta = obj.metadata as Obj;
        meta.name = name;
        return { code: 201, obj: await this.httpCreate(route, obj, q, res) };
      }
      throw notFound(info, name);
    }
    if (type === 'apply' && !q.get('fieldManager')) {
      throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be set');
    }
    if (body === undefined) throw badRequest('the body of the request was empty');
    const patched = applyPatch(type, structuredClone(cur) as Json, body as Json);
    if (!isObject(patched)) throw badRequest('the patch did not produce an object');
    await this.checked(info, patched, q, res);
    if (q.get('dryRun') === 'All') return { code: 200, obj: patched };
    return {
      code: 200,
      obj: this.commitUpdate(info, cur, patched, subresourcePart(route.sub)),
    };
  }

  private deleteOptions(body: Obj | undefined, q: URLSearchParams): FakeDeleteOptions {
    const grace = q.get('gracePeriodSeconds') ?? body?.gracePeriodSeconds;
    const pre = body?.preconditions;
    return {
      ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
      ...(pre
        ? {
            preconditions: {
              ...(pre.uid ? { uid: String(pre.uid) } : {}),
              ...(pre.resourceVersion ? { resourceVersion: String(pre.resourceVersion) } : {}),
            },
          }
        : {}),
    };
  }

  /** TokenRequest (authentication.k8s.io/v1): an unsigned JWT-shaped token with the claims. */
  private tokenRequest(ns: string, name: string, body: Obj | undefined): JsonObject {
    const saInfo = this.resource('serviceaccounts');
    const sa = this.store.get(saInfo, ns, name) as Obj | undefined;
    if (!sa) throw notFound(saInfo, name);
    const spec: Obj = body?.spec ?? {};
    const expirationSeconds: number = spec.expirationSeconds ?? 3600;
    if (expirationSeconds < 600) {
      throw new StatusError(
        422,
        'Invalid',
        `TokenRequest.authentication.k8s.io "${name}" is invalid: spec.expirationSeconds: Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`,
        {
          name,
          group: 'authentication.k8s.io',
          kind: 'TokenRequest',
          causes: [
            {
              reason: 'FieldValueInvalid',
              message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`,
              field: 'spec.expirationSeconds',
            },
          ],
        },
      );
    }
    const audiences: string[] = spec.audiences?.length
      ? spec.audiences
      : ['https://kubernetes.default.svc.cluster.local'];
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + expirationSeconds;
    const ref: Obj | undefined = spec.boundObjectRef;
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = [
      b64({ alg: 'none', kid: 'kubelet-kit-testing' }),
      b64({
        aud: audiences,
        exp,
        iat,
        nbf: iat,
        iss: 'https://kubernetes.default.svc.cluster.local',
        jti: randomUUID(),
        sub: `system:serviceaccount:${ns}:${name}`,
        'kubernetes.io': {
          namespace: ns,
          serviceaccount: { name, uid: sa.metadata.uid },
          ...(ref?.kind === 'Pod' ? { pod: { name: ref.name, uid: ref.uid } } : {}),
        },
      }),
      'unsigned',
    ].join('.');
    const expirationTimestamp = rfc3339(exp * 1000);
    this.issued.push({
      namespace: ns,
      serviceAccount: name,
      token,
      audiences,
      expirationTimestamp,
      ...(ref ? { boundObjectRef: ref } : {}),
    });
    return {
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name, namespace: ns, creationTimestamp: null },
      spec: { audiences, expirationSeconds, ...(ref ? { boundObjectRef: ref } : {}) },
      status: { token, expirationTimestamp },
    };
  }

  /** pods/binding, as the scheduler binds a pod: sets spec.nodeName once. */
  private bind(ns: string, name: string, body: Obj | undefined): JsonObject {
    const info = this.resource('pods');
    const cur = this.store.get(info, ns, name) as Obj | undefined;
    if (!cur) throw notFound(info, name);
    if (cur.spec?.nodeName)
      throw conflict(info, name, `pod ${name} is already assigned to node "${cur.spec.nodeName}"`);
    const next = structuredClone(cur);
    next.spec.nodeName = body?.target?.name;
    this.store.put(info, next as JsonObject);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }
}

/** A throwaway key and certificate for `host`, 127.0.0.1 and localhost, made by openssl. */
function selfSigned(host: string): { key: string; cert: string } {
  const san = [
    `IP:127.0.0.1`,
    'DNS:localhost',
    ...(host !== '127.0.0.1' ? [/^[\d.:]+$/.test(host) ? `IP:${host}` : `DNS:${host}`] : []),
  ];
  let pem: string;
  try {
    pem = execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        '-',
        '-out',
        '-',
        '-days',
        '2',
        '-subj',
        '/CN=kubelet-kit-fake-apiserver',
        '-addext',
        `subjectAltName=${san.join(',')}`,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } catch (e) {
    throw new Error(`FakeApiServer: tls 'self-signed' needs the openssl binary: ${(e as Error).message}`);
  }
  const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n?/.exec(pem)?.[0];
  const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(pem)?.[0];
  if (!key || !cert) throw new Error('FakeApiServer: openssl printed no key and certificate');
  return { key, cert };
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** List items carry no apiVersion and kind, as from the real server. */
function stripTypeMeta(o: JsonObject): JsonObject {
  const { apiVersion: _a, kind: _k, ...rest } = o;
  return rest;
}

/** What part of an object an update of a subresource writes. */
function subresourcePart(sub: string | undefined): 'main' | 'status' | 'ephemeralcontainers' {
  return sub === 'status' ? 'status' : sub === 'ephemeralcontainers' ? 'ephemeralcontainers' : 'main';
}
