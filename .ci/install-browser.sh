#!/usr/bin/env bash
# Install the browser that tests/test_web_page.py drives: the distribution's Chromium
# (Debian/Ubuntu package `chromium`, at /usr/bin/chromium), only if it is missing.
# playwright-core (pinned by web/package-lock.json) drives it; no browser is ever
# downloaded by npm or playwright (this machine kind has no access to their CDN).
# The page's own toolchain (esbuild, playwright-core) is installed by the test (npm ci in web/).
set -euo pipefail

browser="${PTN_CHROMIUM:-/usr/bin/chromium}"
if [ -x "${browser}" ]; then
  echo "install-browser: ${browser} found"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: ${browser} missing and apt-get is not available;" \
    "install Chromium with the system's package manager (or set PTN_CHROMIUM)" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-browser: not root and no sudo; cannot install chromium" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "install-browser: apt-get install chromium"
${sudo[@]+"${sudo[@]}"} apt-get update
${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends chromium
"${browser}" --version
