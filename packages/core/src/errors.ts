/**
 * The runtime's pod network is not ready, so a pod that needs pod networking cannot be synced yet
 * (upstream's `NetworkNotReadyErrorMsg` error). The pod workers retry such a sync after about 1 s
 * instead of the sync error backoff; they recognise it by its class, not its text.
 *
 * @public
 */
export class NetworkNotReadyError extends Error {
  /** A code a caller can switch on. */
  readonly code = 'NetworkNotReady';

  /** @param reason - why the network is not ready, as the runtime says it. */
  constructor(reason = 'container runtime network not ready') {
    // Upstream's text, so logs and FailedSync events read as the kubelet's.
    super(`network is not ready: ${reason}`);
    this.name = 'NetworkNotReadyError';
  }
}
