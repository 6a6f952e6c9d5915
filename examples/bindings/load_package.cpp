// Load a .ptn package in C++ as a runtime does: validate it, read metadata by name, and
// view constants in place. Built without exceptions or RTTI; every failure is a value.
//
//   g++ -std=c++17 -Wall -Wextra -Werror -fno-exceptions -fno-rtti -I generated/cpp/include
//       examples/bindings/load_package.cpp -o load_package
//   ./load_package examples/tiny-llm.ptn
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include <ptn/package.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_package PACKAGE.ptn\n");
    return 2;
  }
  // Maps the file, runs the fast check (zip directory, local headers, safetensors header,
  // JSON members: never the constants' bytes) and opens it if it has no error.
  const ptn::Result<ptn::Package> opened = ptn::Package::open_file(argv[1]);
  if (!opened) {
    // The first error: a rule id of spec.md, the member, a JSON pointer into it.
    std::fprintf(stderr, "%s: %s\n", argv[1], opened.error().what().c_str());
    return 1;
  }
  const ptn::Package& pkg = *opened;
  for (const ptn::Finding& warning : pkg.findings()) {
    std::fprintf(stderr, "warning %s: %s\n", warning.rule.c_str(), warning.message.c_str());
  }

  // Metadata by name and kind: a Result that names the rule when the value is absent, of
  // another kind, or does not fit the type asked for.
  const ptn::Result<std::uint32_t> vocab = pkg.metadata_int<std::uint32_t>("get_vocab_size");
  const ptn::Result<std::vector<std::int64_t>> eos = pkg.metadata_ints("get_eos_ids");
  if (!vocab || !eos) {
    std::fprintf(stderr, "%s\n", (!vocab ? vocab.error() : eos.error()).what().c_str());
    return 1;
  }
  std::printf("vocab %u eos", static_cast<unsigned>(*vocab));
  for (const std::int64_t id : *eos) std::printf(" %lld", static_cast<long long>(id));
  // The schema's well-known names have typed accessors: std::nullopt when absent.
  const ptn::Metadata* metadata = pkg.metadata().value();  // nullptr: no metadata.json
  const std::optional<std::int64_t> context = metadata ? metadata->max_context_len() : std::nullopt;
  std::printf(" context %lld\n", static_cast<long long>(context.value_or(0)));

  // Constants: zero-copy views into the mapping, aliases resolved to their owner's bytes.
  for (const std::string_view key : pkg.keys()) {
    const ptn::TensorView t = *pkg.tensor(key);
    std::printf("%.*s %s [", static_cast<int>(key.size()), key.data(), ptn::dtype_name(t.dtype));
    for (std::size_t d = 0; d < t.rank; ++d) {
      std::printf("%s%lld", d ? ", " : "", static_cast<long long>(t.shape[d]));
    }
    std::printf("] %zu bytes", t.nbytes);
    if (t.is_alias()) std::printf(" = %.*s", static_cast<int>(t.owner.size()), t.owner.data());
    std::printf("\n");
  }
  const ptn::ByteSpan program = pkg.program().value();  // what the runtime loads next
  std::printf("program.ptg %zu bytes\n", program.size);
  return 0;
}
