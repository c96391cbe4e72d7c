/**
 * The kubelet-kit node agent: sync loop, pod handlers, admission, HTTP endpoints, metrics and the kubelet-kit command.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
