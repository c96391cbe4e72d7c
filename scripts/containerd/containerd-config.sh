#!/usr/bin/env bash
# Prints the private containerd's config: `containerd config default` with its own root, state,
# socket, runc root, CNI folders and the settings containerd-here.md lists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$here/env.sh"

cri='plugins."io.containerd.grpc.v1.cri"'
# section|key|value (value is TOML as written). The top level is the empty section.
edits=(
  "|root|\"$KUBELET_KIT_CONTAINERD_ROOT\""
  "|state|\"$KUBELET_KIT_CONTAINERD_STATE\""
  "grpc|address|\"$KUBELET_KIT_CONTAINERD_SOCK\""
  # Without it every sandbox fails: this VM forbids lowering oom_score_adj.
  "$cri|restrict_oom_score_adj|true"
  # Nothing can be pulled here, so the sandbox image is the locally built one.
  "$cri|sandbox_image|\"$KUBELET_KIT_PAUSE_IMAGE\""
  # Network namespaces under our state dir, so down.sh finds every one left over.
  "$cri|netns_mounts_under_state_dir|true"
  "$cri.cni|bin_dir|\"$KUBELET_KIT_CNI_BIN_DIR\""
  "$cri.cni|conf_dir|\"$KUBELET_KIT_CNI_CONF_DIR\""
  # A private runc root keeps our containers apart from a system containerd's.
  "$cri.containerd.runtimes.runc.options|Root|\"$KUBELET_KIT_RUN_DIR/runc\""
  'plugins."io.containerd.internal.v1.opt"|path|"'"$KUBELET_KIT_TEST_ROOT"'/opt"'
)

containerd config default | awk -v edits="$(printf '%s\n' "${edits[@]}")" '
  BEGIN {
    n = split(edits, lines, "\n")
    for (i = 1; i <= n; i++) {
      if (lines[i] == "") continue
      split(lines[i], f, "|")
      want[f[1] SUBSEP f[2]] = f[3]
    }
  }
  /^[ \t]*\[/ {
    section = $0
    gsub(/^[ \t]*\[+|\]+[ \t]*$/, "", section)
  }
  /^[ \t]*[A-Za-z0-9_."-]+[ \t]*=/ {
    key = $0
    sub(/^[ \t]*/, "", key)
    sub(/[ \t]*=.*/, "", key)
    if ((section SUBSEP key) in want) {
      indent = $0
      sub(/[^ \t].*/, "", indent)
      print indent key " = " want[section SUBSEP key]
      done[section SUBSEP key] = 1
      next
    }
  }
  { print }
  END {
    for (k in want) if (!(k in done)) {
      split(k, p, SUBSEP)
      printf "containerd-config.sh: no key %s in [%s] of the default config\n", p[2], p[1] > "/dev/stderr"
      bad = 1
    }
    exit bad
  }
'
