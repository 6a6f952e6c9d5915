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
"$(dirname "$0")/apt-install.sh" install-browser chromium
"${browser}" --version
