#!/usr/bin/env bash
# Fuzz the C++ package validator for a bounded time, then replay a sample of the corpus it
# grew through Python, C++ and Node (they must report the same findings).
#   .ci/fuzz-cpp.sh              # 60 s; PTN_FUZZ_SECONDS=600 for longer
# Needs clang with libFuzzer (Debian: clang and libclang-rt-<version>-dev, installed here
# when missing), and Node >= 20 (the replay builds generated/typescript).
# Everything goes to build/fuzz-cpp/: the binary, seeds/, corpus/ (what the fuzzer grew),
# crash-*/leak-*/timeout-* artifacts, and disagree/ (files the replay found).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${PTN_FUZZ_SECONDS:-60}"
work="${PTN_FUZZ_DIR:-build/fuzz-cpp}"
mkdir -p "${work}/seeds" "${work}/corpus"

probe() {
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' |
    clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o "${work}/probe" >/dev/null 2>&1
}
if ! command -v clang++ >/dev/null 2>&1; then
  .ci/apt-install.sh fuzz-cpp clang
fi
if ! probe; then
  major="$(clang++ -dumpversion | cut -d. -f1)"
  .ci/apt-install.sh fuzz-cpp "libclang-rt-${major}-dev"
  probe
fi

clang++ -std=c++17 -O1 -g1 -Wall -Wextra -Werror -fno-exceptions -fno-rtti \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I generated/cpp/include bindings/cpp/fuzz/fuzz_package.cpp -o "${work}/fuzz_package"

python -m tools.fuzz_cpp seeds "${work}/seeds"
"${work}/fuzz_package" -max_total_time="${seconds}" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -dict=bindings/cpp/fuzz/package.dict -print_final_stats=1 \
  -artifact_prefix="${work}/" "${work}/corpus" "${work}/seeds"

python -m tools.fuzz_cpp replay "${work}/corpus" --sample 300 --out "${work}/disagree"
