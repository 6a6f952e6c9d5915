#!/usr/bin/env bash
# Install what the C++ and TypeScript bindings need to build and run their tests:
#   - nlohmann/json headers (Debian/Ubuntu: nlohmann-json3-dev), only if they are missing;
#   - g++, only if no C++ compiler ($CXX, default g++) is found;
#   - unzip, only if missing (the docs' examples pipe a member of a .ptn into them);
#   - the TypeScript toolchain pinned by generated/typescript/package-lock.json (npm ci;
#     the lock file is edited in bindings/typescript/ and copied by python -m tools.codegen).
# Node.js >= 20 and npm must already be installed (e.g. actions/setup-node).
# Extra compiler flags (say -I for a nlohmann/json elsewhere) go in PTN_CXXFLAGS.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cxx="${CXX:-g++}"

have_compiler() {
  command -v "${cxx%% *}" >/dev/null 2>&1
}

have_nlohmann() {
  if have_compiler; then
    # shellcheck disable=SC2086  # CXX and PTN_CXXFLAGS may hold several words
    echo '#include <nlohmann/json.hpp>' |
      ${cxx} -std=c++17 ${PTN_CXXFLAGS:-} -x c++ -fsyntax-only - >/dev/null 2>&1
  else
    [ -f /usr/include/nlohmann/json.hpp ] || [ -f /usr/local/include/nlohmann/json.hpp ]
  fi
}

apt_packages=()
have_compiler || apt_packages+=(g++)
have_nlohmann || apt_packages+=(nlohmann-json3-dev)
command -v unzip >/dev/null 2>&1 || apt_packages+=(unzip)

if [ "${#apt_packages[@]}" -gt 0 ]; then
  "$(dirname "$0")/apt-install.sh" install-bindings "${apt_packages[@]}"
else
  echo "install-bindings: C++ compiler, nlohmann/json and unzip found"
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "install-bindings: Node.js >= 20 with npm is required for the TypeScript binding" >&2
  exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "${node_major}" -lt 20 ]; then
  echo "install-bindings: Node.js >= 20 is required, found $(node --version)" >&2
  exit 1
fi

cd "${repo}/generated/typescript"
npm ci --no-audit --no-fund
