#!/usr/bin/env bash
# Install what the C++, TypeScript and Java bindings need to build and run their tests:
#   - g++, only if no C++ compiler ($CXX, default g++) is found (the C++ binding needs
#     nothing but the C++17 standard library);
#   - cmake, only if missing (tests/test_cpp_package.py builds the CMake package);
#   - unzip, only if missing (the docs' examples pipe a member of a .ptn into them);
#   - the TypeScript toolchain pinned by generated/typescript/package-lock.json (npm ci;
#     the lock file is edited in bindings/typescript/ and copied by python -m tools.codegen);
#   - a JDK (javac) and Maven, only if missing (Debian's openjdk-17-jdk-headless and maven:
#     the Java binding targets Java 11 and needs nothing beyond the JDK); then the binding's
#     JUnit tests run once under Maven, offline, against the local Maven repository
#     (~/.m2, which this project's machines carry: only PyPI, npm and Debian are reachable,
#     so a machine without JUnit and the pinned plugins there cannot run them; say so).
# Node.js >= 20 and npm must already be installed (e.g. actions/setup-node).
# Extra compiler flags go in PTN_CXXFLAGS. The fuzzer's clang: .ci/fuzz-cpp.sh.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cxx="${CXX:-g++}"

apt_packages=()
command -v "${cxx%% *}" >/dev/null 2>&1 || apt_packages+=(g++)
command -v cmake >/dev/null 2>&1 || apt_packages+=(cmake)
command -v unzip >/dev/null 2>&1 || apt_packages+=(unzip)
command -v javac >/dev/null 2>&1 || apt_packages+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || apt_packages+=(maven)

if [ "${#apt_packages[@]}" -gt 0 ]; then
  "$(dirname "$0")/apt-install.sh" install-bindings "${apt_packages[@]}"
else
  echo "install-bindings: C++ compiler, cmake, unzip, JDK and Maven found"
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

# The Java binding's JUnit tests (tests/test_java.py runs them again on a copy; this run
# says early, with Maven's own output, when the local repository lacks what they need).
java_build="$(mktemp -d)"
cp -r "${repo}/generated/java/." "${java_build}/"
rm -rf "${java_build}/build" "${java_build}/target"
(cd "${java_build}" && mvn -B -o -q test)
rm -rf "${java_build}"
echo "install-bindings: the Java binding builds (Java 11 target) and its JUnit tests pass"
