#!/usr/bin/env bash
# The main job: run the kubelet-kit agent on the example static pods, on a private containerd.
# Installs what is missing (npm packages; containerd, runc, CNI plugins, busybox from Debian),
# builds, starts the private containerd, then runs `kubelet-kit run` in the foreground (a live
# pod table on a terminal, JSON logs otherwise). Ctrl-C stops the agent; the pods keep running
# and a new agent adopts them. `bash scripts/containerd/down.sh` removes everything.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build
source scripts/containerd/env.sh
bash scripts/containerd/up.sh

# The `kubelet-kit` command as npm links it (its first line gives Node's flags).
exec packages/node/bin/kubelet-kit.js run \
  --pod-manifest-path "${KUBELET_KIT_DEMO_MANIFESTS:-examples/static-pods}" \
  --container-runtime-endpoint "$KUBELET_KIT_CRI_ENDPOINT" \
  --root-dir "$KUBELET_KIT_TEST_ROOT/agent" \
  --hostname-override "${KUBELET_KIT_DEMO_NODE:-demo-node}" \
  "$@"
