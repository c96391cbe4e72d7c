# shellcheck shell=bash
# Helpers shared by up.sh and down.sh (sourced after env.sh).

kk_require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$(basename "$0"): must run as root (containerd, mounts, bridges)" >&2
    exit 1
  fi
}

# One up/down at a time; a nested call (up.sh running down.sh) inherits the lock.
kk_lock() {
  [ "${KUBELET_KIT_CONTAINERD_LOCKED:-}" = 1 ] && return 0
  mkdir -p "$KUBELET_KIT_RUN_DIR"
  exec 9>"$KUBELET_KIT_RUN_DIR/lock"
  flock -w 600 9 || { echo "$(basename "$0"): timed out waiting for $KUBELET_KIT_RUN_DIR/lock" >&2; exit 1; }
  export KUBELET_KIT_CONTAINERD_LOCKED=1
}

# Prints the pid of the containerd these scripts started, if it still runs. It is recognised by
# the pidfile and its own --config argument, never by name, so a system containerd is left alone.
kk_running_pid() {
  local pid args
  pid="$(cat "$KUBELET_KIT_CONTAINERD_PIDFILE" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  args="$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
  grep -qxF -- "$KUBELET_KIT_CONTAINERD_CONFIG" <<<"$args" || return 1
  echo "$pid"
}

kk_ctr() {
  ctr --address "$KUBELET_KIT_CONTAINERD_SOCK" "$@"
}

# Mount points at or below a directory, deepest first.
kk_mounts_under() {
  local dir="$1"
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r | uniq
}
