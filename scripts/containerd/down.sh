#!/usr/bin/env bash
# Stops the private containerd and removes what it left: pod sandboxes and containers, runc
# state, mounts under its root and state, the CNI bridge and IP reservations, and its root and
# state folders. Keeps the built image archives (and the config and log, for a look afterwards).
# Idempotent: safe to run when nothing is up.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$here/env.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"

kk_require_root
kk_lock

warn() { echo "down.sh: $*" >&2; }

if pid="$(kk_running_pid)"; then
  # Through the CRI first: that also tears down pod networking (CNI DEL) and netns.
  if [ -S "$KUBELET_KIT_CONTAINERD_SOCK" ]; then
    node "$here/cri-status.mjs" --endpoint "$KUBELET_KIT_CRI_ENDPOINT" --clean ||
      warn "removing pods through the CRI failed; forcing"
    # Anything not made through the CRI (ctr, other namespaces).
    for ns in $(kk_ctr namespaces ls -q 2>/dev/null); do
      for task in $(kk_ctr -n "$ns" tasks ls -q 2>/dev/null); do
        kk_ctr -n "$ns" tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
        kk_ctr -n "$ns" tasks delete -f "$task" >/dev/null 2>&1 || true
      done
      for c in $(kk_ctr -n "$ns" containers ls -q 2>/dev/null); do
        kk_ctr -n "$ns" containers delete "$c" >/dev/null 2>&1 || true
      done
    done
  fi

  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    warn "containerd (pid $pid) ignored SIGTERM for 10s; killing"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  echo "down.sh: stopped containerd (pid $pid)"
fi

# Containers whose shim outlived containerd: runc's private root lists exactly ours.
if [ -d "$KUBELET_KIT_RUN_DIR/runc" ] && command -v runc >/dev/null; then
  for r in "$KUBELET_KIT_RUN_DIR"/runc/*/; do
    [ -d "$r" ] || continue
    for id in $(runc --root "$r" list -q 2>/dev/null); do
      runc --root "$r" delete --force "$id" >/dev/null 2>&1 || warn "runc delete $id failed"
    done
  done
fi
# Their shims: found by our socket on their command line, ended by pid. A shim's own socket
# sits at /run/containerd/s/sha256(<containerd socket>/<namespace>/<id>); remove that too.
for p in /proc/[0-9]*; do
  mapfile -d '' -t argv 2>/dev/null <"$p/cmdline" || continue
  [[ "${argv[0]:-}" == *containerd-shim* ]] || continue
  ns="" id="" address=""
  for ((i = 1; i + 1 < ${#argv[@]}; i++)); do
    case "${argv[i]}" in
    -namespace) ns="${argv[i + 1]}" ;;
    -id) id="${argv[i + 1]}" ;;
    -address) address="${argv[i + 1]}" ;;
    esac
  done
  [ "$address" = "$KUBELET_KIT_CONTAINERD_SOCK" ] || continue
  kill -KILL "${p#/proc/}" 2>/dev/null || true
  hash="$(printf '%s' "$address/$ns/$id" | sha256sum | cut -d' ' -f1)"
  rm -f "/run/containerd/s/$hash"
done

# Leftover mounts (container rootfs, shm, network namespaces), deepest first.
for dir in "$KUBELET_KIT_CONTAINERD_STATE" "$KUBELET_KIT_CONTAINERD_ROOT"; do
  for m in $(kk_mounts_under "$dir"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || warn "cannot unmount $m"
  done
done

# iptables rules the bridge plugin adds per pod carry our network name in a comment; a pod
# removed through the CRI took its own, this catches those of pods that never got a CNI DEL.
if command -v iptables >/dev/null; then
  declare -A chains=()
  while read -r rule; do
    [[ "$rule" =~ ^-A\ ([^ ]+)\  ]] || continue
    chain="${BASH_REMATCH[1]}"
    if [[ "$chain" == CNI-* ]]; then
      chains["$chain"]=1
    else
      # The rule is printed in iptables' own quoting, so eval gives back its arguments.
      eval "iptables -t nat ${rule/#-A/-D}" 2>/dev/null || true
    fi
  done < <(iptables -t nat -S 2>/dev/null | grep -F "name: \\\"$KUBELET_KIT_CNI_NETWORK\\\"" || true)
  for c in "${!chains[@]}"; do
    iptables -t nat -F "$c" 2>/dev/null || true
    iptables -t nat -X "$c" 2>/dev/null || true
  done
fi

if ip link show "$KUBELET_KIT_CNI_BRIDGE" >/dev/null 2>&1; then
  ip link delete "$KUBELET_KIT_CNI_BRIDGE" && echo "down.sh: removed bridge $KUBELET_KIT_CNI_BRIDGE"
fi

# Remove state only when nothing is mounted below it any more, and never across a mount.
for dir in "$KUBELET_KIT_CONTAINERD_STATE" "$KUBELET_KIT_CONTAINERD_ROOT" "$KUBELET_KIT_RUN_DIR/runc" \
  "$KUBELET_KIT_CNI_IPAM_DIR"; do
  [ -e "$dir" ] || continue
  if [ -n "$(kk_mounts_under "$dir")" ]; then
    warn "still mounted under $dir; leaving it"
  else
    rm -rf --one-file-system "$dir"
  fi
done
rm -f "$KUBELET_KIT_CONTAINERD_PIDFILE" "$KUBELET_KIT_CONTAINERD_SOCK" "$KUBELET_KIT_CONTAINERD_SOCK.ttrpc" "$KUBELET_KIT_RUN_DIR/imported-key"
echo "down.sh: down"
