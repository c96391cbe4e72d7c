# shellcheck shell=bash
# Fixed locations of the private containerd that tests and the demo use. Source this file; every
# value can be overridden by exporting it first. Tests read only KUBELET_KIT_CRI_ENDPOINT.

export KUBELET_KIT_TEST_ROOT="${KUBELET_KIT_TEST_ROOT:-/var/lib/kubelet-kit-test}"
# Runtime files (socket, pidfile, containerd state) live on /run so a reboot clears them.
export KUBELET_KIT_RUN_DIR="${KUBELET_KIT_RUN_DIR:-/run/kubelet-kit-test}"

# The socket follows the endpoint when only the endpoint is overridden, and vice versa.
if [ -n "${KUBELET_KIT_CRI_ENDPOINT:-}" ] && [ -z "${KUBELET_KIT_CONTAINERD_SOCK:-}" ]; then
  KUBELET_KIT_CONTAINERD_SOCK="${KUBELET_KIT_CRI_ENDPOINT#unix://}"
fi
export KUBELET_KIT_CONTAINERD_SOCK="${KUBELET_KIT_CONTAINERD_SOCK:-$KUBELET_KIT_RUN_DIR/containerd.sock}"
export KUBELET_KIT_CRI_ENDPOINT="${KUBELET_KIT_CRI_ENDPOINT:-unix://$KUBELET_KIT_CONTAINERD_SOCK}"

export KUBELET_KIT_CONTAINERD_ROOT="${KUBELET_KIT_CONTAINERD_ROOT:-$KUBELET_KIT_TEST_ROOT/containerd/root}"
export KUBELET_KIT_CONTAINERD_STATE="${KUBELET_KIT_CONTAINERD_STATE:-$KUBELET_KIT_RUN_DIR/state}"
export KUBELET_KIT_CONTAINERD_CONFIG="${KUBELET_KIT_CONTAINERD_CONFIG:-$KUBELET_KIT_TEST_ROOT/containerd/config.toml}"
export KUBELET_KIT_CONTAINERD_LOG="${KUBELET_KIT_CONTAINERD_LOG:-$KUBELET_KIT_TEST_ROOT/containerd.log}"
export KUBELET_KIT_CONTAINERD_PIDFILE="${KUBELET_KIT_CONTAINERD_PIDFILE:-$KUBELET_KIT_RUN_DIR/containerd.pid}"

# Pod networking: one bridge + host-local conflist in a private folder.
export KUBELET_KIT_CNI_CONF_DIR="${KUBELET_KIT_CNI_CONF_DIR:-$KUBELET_KIT_TEST_ROOT/cni/net.d}"
export KUBELET_KIT_CNI_BIN_DIR="${KUBELET_KIT_CNI_BIN_DIR:-/usr/lib/cni}"
export KUBELET_KIT_CNI_IPAM_DIR="${KUBELET_KIT_CNI_IPAM_DIR:-$KUBELET_KIT_TEST_ROOT/cni/ipam}"
export KUBELET_KIT_CNI_BRIDGE="${KUBELET_KIT_CNI_BRIDGE:-kkit0}"
export KUBELET_KIT_POD_SUBNET="${KUBELET_KIT_POD_SUBNET:-10.244.0.0/16}"
# The CNI network name tags each pod's NAT rules; one per instance, so one instance's down.sh
# never removes another's rules.
export KUBELET_KIT_CNI_NETWORK="${KUBELET_KIT_CNI_NETWORK:-kubelet-kit-$KUBELET_KIT_CNI_BRIDGE}"

# Test images, built locally from busybox-static (nothing can be pulled here).
export KUBELET_KIT_IMAGE_DIR="${KUBELET_KIT_IMAGE_DIR:-$KUBELET_KIT_TEST_ROOT/images}"
export KUBELET_KIT_BUSYBOX_IMAGE="${KUBELET_KIT_BUSYBOX_IMAGE:-localhost/kubelet-kit/busybox:1.0}"
export KUBELET_KIT_PAUSE_IMAGE="${KUBELET_KIT_PAUSE_IMAGE:-localhost/kubelet-kit/pause:1.0}"
