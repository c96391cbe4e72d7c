/**
 * An error whose `code` is upstream's reason string, which a caller switches on. The base of the
 * managers' error classes, so they share one shape.
 *
 * @public
 */
export class CodedError<Code extends string> extends Error {
  /** A code a caller can switch on. */
  readonly code: Code;
  constructor(name: string, code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = name;
    this.code = code;
  }
}

/**
 * The runtime's pod network is not ready, so a pod that needs pod networking cannot be synced yet
 * (upstream's `NetworkNotReadyErrorMsg` error). The pod workers retry such a sync after about 1 s
 * instead of the sync error backoff; they recognise it by its class, not its text.
 *
 * @public
 */
export class NetworkNotReadyError extends CodedError<'NetworkNotReady'> {
  /** @param reason - why the network is not ready, as the runtime says it. */
  constructor(reason = 'container runtime network not ready') {
    // Upstream's text, so logs and FailedSync events read as the kubelet's.
    super('NetworkNotReadyError', 'NetworkNotReady', `network is not ready: ${reason}`);
  }
}
