#!/usr/bin/env bash
# Starts the private containerd (installing it and building its images first when needed),
# imports the test images and waits until the CRI reports RuntimeReady and NetworkReady.
# Does nothing when an instance it started is already up, healthy and configured the same.
# Prints the containerd version it ended up with.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$here/env.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"

kk_require_root
kk_lock

bash "$here/install.sh"
command -v node >/dev/null || { echo "up.sh: node is required" >&2; exit 1; }
node -e 'require.resolve("@grpc/grpc-js"); require.resolve("protobufjs")' 2>/dev/null || {
  echo "up.sh: @grpc/grpc-js/protobufjs not found; run npm ci at the repository root first" >&2
  exit 1
}
bash "$here/images.sh"

status() { node "$here/cri-status.mjs" --endpoint "$KUBELET_KIT_CRI_ENDPOINT" "$@"; }

# --- desired configuration --------------------------------------------------------------------
config="$(bash "$here/containerd-config.sh")"
subnet="$KUBELET_KIT_POD_SUBNET"
conflist="$(cat <<JSON
{
  "cniVersion": "1.0.0",
  "name": "$KUBELET_KIT_CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$KUBELET_KIT_CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$subnet" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$KUBELET_KIT_CNI_IPAM_DIR"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON
)"
conffile="$KUBELET_KIT_CNI_CONF_DIR/10-kubelet-kit.conflist"

# --- already up? ------------------------------------------------------------------------------
start=1
if pid="$(kk_running_pid)"; then
  if [ "$config" = "$(cat "$KUBELET_KIT_CONTAINERD_CONFIG" 2>/dev/null)" ] &&
    [ "$conflist" = "$(cat "$conffile" 2>/dev/null)" ] &&
    version="$(status --timeout 30)"; then
    have="$(kk_ctr -n k8s.io images ls -q)"
    if grep -qxF "$KUBELET_KIT_BUSYBOX_IMAGE" <<<"$have" && grep -qxF "$KUBELET_KIT_PAUSE_IMAGE" <<<"$have" &&
      cmp -s "$KUBELET_KIT_IMAGE_DIR/key" "$KUBELET_KIT_RUN_DIR/imported-key"; then
      echo "up.sh: already running (pid $pid) at $KUBELET_KIT_CRI_ENDPOINT"
      echo "$version"
      exit 0
    fi
    start=0 # healthy, but an image is gone or was rebuilt: import again below
  else
    echo "up.sh: running instance (pid $pid) is unhealthy or configured differently; restarting"
    bash "$here/down.sh"
  fi
elif [ -e "$KUBELET_KIT_CONTAINERD_STATE" ] || [ -e "$KUBELET_KIT_CONTAINERD_PIDFILE" ]; then
  # A dead instance may have left mounts, shims or a bridge behind: clean those first.
  bash "$here/down.sh"
fi

# --- start --------------------------------------------------------------------------------------
if [ "$start" = 1 ]; then
  mkdir -p "$KUBELET_KIT_CONTAINERD_ROOT" "$KUBELET_KIT_CONTAINERD_STATE" "$KUBELET_KIT_CNI_CONF_DIR" \
    "$KUBELET_KIT_CNI_IPAM_DIR" "$(dirname "$KUBELET_KIT_CONTAINERD_CONFIG")" \
    "$(dirname "$KUBELET_KIT_CONTAINERD_LOG")" "$(dirname "$KUBELET_KIT_CONTAINERD_SOCK")"
  printf '%s\n' "$config" >"$KUBELET_KIT_CONTAINERD_CONFIG"
  # Only our conflist: containerd loads the first file of the folder.
  find "$KUBELET_KIT_CNI_CONF_DIR" -mindepth 1 -maxdepth 1 ! -name "$(basename "$conffile")" -delete
  printf '%s\n' "$conflist" >"$conffile"
  [ -f "$KUBELET_KIT_CONTAINERD_LOG" ] && mv -f "$KUBELET_KIT_CONTAINERD_LOG" "$KUBELET_KIT_CONTAINERD_LOG.1"

  # Own session, cwd / and no inherited descriptors beyond the log: it outlives this script and
  # the caller's terminal, and holds no pipe of the caller open (a CI log reader would hang).
  # shellcheck disable=SC2016
  setsid bash -c '
    cd /
    for fd in /proc/$$/fd/*; do
      fd="${fd##*/}"
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec containerd --config "$1"' containerd-up "$KUBELET_KIT_CONTAINERD_CONFIG" \
    </dev/null >>"$KUBELET_KIT_CONTAINERD_LOG" 2>&1 &
  pid=$!
  echo "$pid" >"$KUBELET_KIT_CONTAINERD_PIDFILE"
  echo "up.sh: started containerd (pid $pid), log $KUBELET_KIT_CONTAINERD_LOG"

  for _ in $(seq 1 300); do
    [ -S "$KUBELET_KIT_CONTAINERD_SOCK" ] && kk_ctr version >/dev/null 2>&1 && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "up.sh: containerd exited; last log lines:" >&2
      tail -n 30 "$KUBELET_KIT_CONTAINERD_LOG" >&2
      exit 1
    fi
    sleep 0.1
  done
  kk_ctr version >/dev/null || { echo "up.sh: no socket at $KUBELET_KIT_CONTAINERD_SOCK after 30s" >&2; exit 1; }
fi

# --- images and readiness ---------------------------------------------------------------------
for image in busybox pause; do
  kk_ctr -n k8s.io images import "$KUBELET_KIT_IMAGE_DIR/$image.tar" >/dev/null
done
cp "$KUBELET_KIT_IMAGE_DIR/key" "$KUBELET_KIT_RUN_DIR/imported-key"
if ! version="$(status --timeout 60)"; then
  echo "up.sh: last log lines:" >&2
  tail -n 30 "$KUBELET_KIT_CONTAINERD_LOG" >&2
  exit 1
fi
echo "up.sh: ready at $KUBELET_KIT_CRI_ENDPOINT (images $KUBELET_KIT_BUSYBOX_IMAGE, $KUBELET_KIT_PAUSE_IMAGE)"
echo "$version"
