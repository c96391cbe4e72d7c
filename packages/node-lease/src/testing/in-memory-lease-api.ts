import { type Lease, type LeaseApi, LeaseApiError, type NodeUidGetter } from '@kubelet-kit/core';

/** A call the {@link InMemoryLeaseApi} answered (or failed). @public */
export interface LeaseApiCall {
  readonly method: 'get' | 'create' | 'update' | 'getNodeUid';
  readonly namespace: string;
  readonly name: string;
  /** The object sent, for create and update. */
  readonly lease?: Lease;
  /** The error code it failed with, if it did. */
  readonly error?: string;
}

/**
 * An in-memory Lease store that behaves as the API server does for the calls the lease controller
 * makes: create sets uid, creationTimestamp and a resourceVersion, every write bumps the
 * resourceVersion and an update with a stale one is a `Conflict`. Nodes for the owner lookup are
 * set with `setNode`. Faults: `down` fails every call, `failNext` fails the next calls of a method.
 *
 * @public
 */
export class InMemoryLeaseApi implements LeaseApi, NodeUidGetter {
  /** Every call, in order. */
  readonly calls: LeaseApiCall[] = [];
  /** While true every call rejects with an `Other` error, as an unreachable API server. */
  down = false;
  readonly #leases = new Map<string, Lease>();
  readonly #nodes = new Map<string, string>();
  readonly #faults = new Map<LeaseApiCall['method'], LeaseApiError[]>();
  #resourceVersion = 0;
  #uid = 0;

  /** The stored lease, a copy; undefined when there is none. */
  lease(namespace: string, name: string): Lease | undefined {
    const lease = this.#leases.get(`${namespace}/${name}`);
    return lease ? structuredClone(lease) : undefined;
  }

  /** Stores `lease` as is but for a new resourceVersion, as another writer would. */
  put(lease: Lease): Lease {
    const stored = structuredClone(lease);
    stored.metadata = { ...stored.metadata, resourceVersion: this.#nextVersion() };
    this.#leases.set(this.#key(stored), stored);
    return structuredClone(stored);
  }

  /** Makes a Node exist (or, with `uid` undefined, not exist) for `getNodeUid`. */
  setNode(name: string, uid: string | undefined): void {
    if (uid === undefined) this.#nodes.delete(name);
    else this.#nodes.set(name, uid);
  }

  /** Fails the next `times` calls of `method` with `error` (a `LeaseApiError`, or one of code `Other`). */
  failNext(method: LeaseApiCall['method'], error: LeaseApiError | string, times = 1): void {
    const err = typeof error === 'string' ? new LeaseApiError('Other', error) : error;
    const queue = this.#faults.get(method) ?? [];
    for (let i = 0; i < times; i++) queue.push(err);
    this.#faults.set(method, queue);
  }

  /** The calls of one method. */
  callsOf(method: LeaseApiCall['method']): LeaseApiCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  async get(namespace: string, name: string): Promise<Lease> {
    this.#fault('get', namespace, name);
    const lease = this.#leases.get(`${namespace}/${name}`);
    if (!lease)
      throw this.#fail(
        'get',
        namespace,
        name,
        new LeaseApiError('NotFound', `leases "${name}" not found`, { status: 404 }),
      );
    this.calls.push({ method: 'get', namespace, name });
    return structuredClone(lease);
  }

  async create(lease: Lease): Promise<Lease> {
    const { namespace, name } = this.#names(lease);
    this.#fault('create', namespace, name, lease);
    if (this.#leases.has(`${namespace}/${name}`)) {
      throw this.#fail(
        'create',
        namespace,
        name,
        new LeaseApiError('AlreadyExists', `leases "${name}" already exists`, { status: 409 }),
        lease,
      );
    }
    const stored = structuredClone(lease);
    stored.metadata = {
      ...stored.metadata,
      namespace,
      uid: `lease-uid-${++this.#uid}`,
      creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      resourceVersion: this.#nextVersion(),
    };
    this.#leases.set(`${namespace}/${name}`, stored);
    this.calls.push({ method: 'create', namespace, name, lease: structuredClone(lease) });
    return structuredClone(stored);
  }

  async update(lease: Lease): Promise<Lease> {
    const { namespace, name } = this.#names(lease);
    this.#fault('update', namespace, name, lease);
    const current = this.#leases.get(`${namespace}/${name}`);
    if (!current) {
      throw this.#fail(
        'update',
        namespace,
        name,
        new LeaseApiError('NotFound', `leases "${name}" not found`, { status: 404 }),
        lease,
      );
    }
    const rv = lease.metadata?.resourceVersion;
    if (rv && rv !== current.metadata?.resourceVersion) {
      throw this.#fail(
        'update',
        namespace,
        name,
        new LeaseApiError(
          'Conflict',
          `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          { status: 409 },
        ),
        lease,
      );
    }
    const stored = structuredClone(lease);
    stored.metadata = {
      ...stored.metadata,
      uid: current.metadata?.uid,
      creationTimestamp: current.metadata?.creationTimestamp,
      resourceVersion: this.#nextVersion(),
    };
    this.#leases.set(`${namespace}/${name}`, stored);
    this.calls.push({ method: 'update', namespace, name, lease: structuredClone(lease) });
    return structuredClone(stored);
  }

  async getNodeUid(nodeName: string): Promise<string> {
    this.#fault('getNodeUid', '', nodeName);
    const uid = this.#nodes.get(nodeName);
    if (!uid)
      throw this.#fail(
        'getNodeUid',
        '',
        nodeName,
        new LeaseApiError('NotFound', `nodes "${nodeName}" not found`, { status: 404 }),
      );
    this.calls.push({ method: 'getNodeUid', namespace: '', name: nodeName });
    return uid;
  }

  #fault(method: LeaseApiCall['method'], namespace: string, name: string, lease?: Lease): void {
    if (this.down)
      throw this.#fail(method, namespace, name, new LeaseApiError('Other', 'connect ECONNREFUSED'), lease);
    const err = this.#faults.get(method)?.shift();
    if (err) throw this.#fail(method, namespace, name, err, lease);
  }

  #fail(
    method: LeaseApiCall['method'],
    namespace: string,
    name: string,
    error: LeaseApiError,
    lease?: Lease,
  ): LeaseApiError {
    this.calls.push({
      method,
      namespace,
      name,
      error: error.code,
      ...(lease ? { lease: structuredClone(lease) } : {}),
    });
    return error;
  }

  #names(lease: Lease): { namespace: string; name: string } {
    const namespace = lease.metadata?.namespace;
    const name = lease.metadata?.name;
    if (!namespace || !name)
      throw new LeaseApiError('Other', 'lease: metadata.namespace and metadata.name are required', {
        status: 422,
      });
    return { namespace, name };
  }

  #key(lease: Lease): string {
    const { namespace, name } = this.#names(lease);
    return `${namespace}/${name}`;
  }

  #nextVersion(): string {
    return String(++this.#resourceVersion);
  }
}
