#!/usr/bin/env bash
# Builds the busybox and sandbox ("pause") OCI archives from the installed busybox-static into
# $KUBELET_KIT_IMAGE_DIR. Rebuilds only when busybox, the builder or the image names changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$here/env.sh"

busybox=/bin/busybox
[ -x "$busybox" ] || { echo "images.sh: $busybox missing (install busybox-static)" >&2; exit 1; }
file_busybox="$(readlink -f "$busybox")"
# A dynamically linked busybox (package `busybox`) would not run inside the image.
if command -v file >/dev/null 2>&1 && ! file -L "$file_busybox" | grep -q 'statically linked'; then
  echo "images.sh: $busybox is not statically linked; install busybox-static" >&2
  exit 1
fi

key="$(
  {
    sha256sum "$file_busybox" | cut -d' ' -f1
    sha256sum "$here/build-images.mjs" | cut -d' ' -f1
    echo "$KUBELET_KIT_BUSYBOX_IMAGE $KUBELET_KIT_PAUSE_IMAGE $(uname -m)"
  } | sha256sum | cut -d' ' -f1
)"
dir="$KUBELET_KIT_IMAGE_DIR"
if [ -f "$dir/busybox.tar" ] && [ -f "$dir/pause.tar" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ]; then
  echo "images.sh: up to date in $dir"
  exit 0
fi

mkdir -p "$dir"
rm -f "$dir/key"
node "$here/build-images.mjs" "$file_busybox" "$dir" "$KUBELET_KIT_BUSYBOX_IMAGE" "$KUBELET_KIT_PAUSE_IMAGE"
echo "$key" >"$dir/key"
echo "images.sh: built $dir/busybox.tar ($KUBELET_KIT_BUSYBOX_IMAGE) and $dir/pause.tar ($KUBELET_KIT_PAUSE_IMAGE)"
