#!/usr/bin/env bash
# Installs what the private containerd needs from Debian's own repositories, only when missing.
set -euo pipefail

packages=(containerd runc containernetworking-plugins busybox-static)
# `ip` (down.sh removes the bridge) and `flock` are on every Debian, but a slim image may lack them.
command -v ip >/dev/null 2>&1 || packages+=(iproute2)
command -v flock >/dev/null 2>&1 || packages+=(util-linux)

missing=()
for p in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install.sh: already installed: ${packages[*]}"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: missing ${missing[*]}; run as root to install them" >&2
  exit 1
fi

echo "install.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

# The Debian containerd package enables a system containerd; ours runs privately beside it
# (own socket, root and state), so it is left as the package set it up.
for p in "${missing[@]}"; do
  dpkg-query -W -f='${Status}' "$p" | grep -q 'install ok installed' || {
    echo "install.sh: $p did not install" >&2
    exit 1
  }
done
