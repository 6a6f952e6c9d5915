#!/usr/bin/env bash
# apt-install.sh TAG PACKAGE...: install Debian packages for a CI step, with sudo when not
# root; exits non-zero (naming TAG) when apt-get or the rights to run it are missing.
set -euo pipefail
tag=$1
shift
if ! command -v apt-get >/dev/null 2>&1; then
  echo "${tag}: need $* but apt-get is not available;" \
    "install them with the system's package manager" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "${tag}: not root and no sudo; cannot install $*" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "${tag}: apt-get install $*"
# An install cut off earlier (a killed CI run) leaves dpkg half-configured, and apt-get then
# refuses everything ("dpkg was interrupted"); finishing it first is a no-op otherwise.
${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive dpkg --configure -a
${sudo[@]+"${sudo[@]}"} apt-get update
${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "$@"
