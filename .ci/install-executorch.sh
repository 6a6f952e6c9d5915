#!/usr/bin/env bash
# Install the released ExecuTorch (1.5.1, CPU) and what tools/real_exports.py needs to
# re-export the packages under tests/fixtures/real/. The fixtures are committed; the test
# suite uses executorch only as a reference (tests/test_program.py: its reader and its
# validate_program against ptn's decoder and builder), and skips those tests without it.
# .ci/run installs it; nothing in ptn/ imports executorch.
#
# Idempotent: does nothing when executorch 1.5.1 already imports. Never installs a torch
# other than 2.13.0 (the CPU build; an unpinned torch would pull a multi-GB CUDA build):
# executorch and torchao go in with --no-deps, and torch is pinned first when missing.
set -euo pipefail

PYTHON="${PYTHON:-python}"
TORCH_VERSION=2.13.0
EXECUTORCH_VERSION=1.5.1

installed_version() {
  # Version of an installed distribution, or nothing.
  "$PYTHON" - "$1" <<'EOF' 2>/dev/null || true
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    print(version(sys.argv[1]))
except PackageNotFoundError:
    pass
EOF
}

torch_version="$(installed_version torch)"
if [ -z "$torch_version" ]; then
  "$PYTHON" -m pip install "torch==${TORCH_VERSION}"
  torch_version="$(installed_version torch)"
fi
case "$torch_version" in
  "${TORCH_VERSION}" | "${TORCH_VERSION}+"*) ;;
  *)
    echo "install-executorch: torch ${torch_version} is installed; the fixtures are made" \
      "with torch ${TORCH_VERSION} (refusing to replace it)" >&2
    exit 1
    ;;
esac

if "$PYTHON" -c 'import executorch' >/dev/null 2>&1 &&
  [ "$(installed_version executorch)" = "${EXECUTORCH_VERSION}" ]; then
  echo "install-executorch: executorch ${EXECUTORCH_VERSION} already installed"
  exit 0
fi

# executorch's own requirements list many packages to_native does not use (coremltools,
# pandas, scikit-learn, ...): install it without them, then the few the export path imports.
"$PYTHON" -m pip install --no-deps "executorch==${EXECUTORCH_VERSION}"
"$PYTHON" -m pip install \
  'flatbuffers==25.12.19' 'numpy>=1.24,<3' 'packaging>=23' 'pyyaml>=6,<7' \
  'ruamel.yaml==0.19.1' 'tabulate==0.10.0' 'safetensors>=0.4,<1'
"$PYTHON" -m pip install --no-deps 'torchao==0.18.0'
# transformers does not depend on torch, so this never pulls a CUDA build.
"$PYTHON" -m pip install 'transformers==5.25.0'

torch_after="$(installed_version torch)"
case "$torch_after" in
  "${TORCH_VERSION}" | "${TORCH_VERSION}+"*) ;;
  *)
    echo "install-executorch: torch changed to ${torch_after}" >&2
    exit 1
    ;;
esac
"$PYTHON" -c 'import executorch.exir.native, torchao, transformers' >/dev/null
echo "install-executorch: executorch $(installed_version executorch)," \
  "torch ${torch_after}, torchao $(installed_version torchao)," \
  "transformers $(installed_version transformers)"
