#!/usr/bin/env bash
# Prints the path of a usable kubectl: $KUBECTL if set, else the one on PATH, else Debian's
# kubernetes-client installed with apt-get (kubectl 1.20 on Debian 12). Exits 1 if none.
set -euo pipefail
if [[ -n "${KUBECTL:-}" && -x "${KUBECTL}" ]]; then
  echo "$KUBECTL"
  exit 0
fi
if command -v kubectl >/dev/null 2>&1; then
  command -v kubectl
  exit 0
fi
sudo=""
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
    echo "kubectl.sh: no kubectl on PATH and not root to apt-get install kubernetes-client" >&2
    exit 1
  fi
fi
if command -v apt-get >/dev/null 2>&1; then
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kubernetes-client >&2
fi
if command -v kubectl >/dev/null 2>&1; then
  command -v kubectl
  exit 0
fi
echo "kubectl.sh: no kubectl found and kubernetes-client could not be installed" >&2
exit 1
