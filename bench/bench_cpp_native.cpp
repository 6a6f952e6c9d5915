// The C++ side of bench/bench_cpp.py: the ptn C++ binding timed in-process against the
// fastest C++ baselines of what it does (simdjson parsing a header, zlib's CRC-32), and a
// one-shot check for timing whole processes. Built by bench_cpp.py:
//   g++ -std=c++17 -O2 -fno-exceptions -fno-rtti -I generated/cpp/include
//       bench/bench_cpp_native.cpp -lsimdjson -lz
//
//   bench_cpp_native check FILE [--deep]   exit 0 valid, 1 invalid (one validation)
//   bench_cpp_native header FILE ROUNDS    a safetensors image: ptn's header pass, simdjson
//   bench_cpp_native deep FILE ROUNDS      a package: ptn's deep check, zlib over the file
// "header" and "deep" print one line per round: "<ptn ns> <baseline ns>", each pair timed
// back to back on this thread's CPU clock (the machine is shared and its speed drifts; the
// script takes the median of the ratios).
#include <simdjson.h>
#include <time.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ptn/package.hpp"

namespace {

/// This thread's CPU time: the machine is shared, and a pair timed back to back on the
/// CPU clock is not skewed by another process taking the core between the two.
struct Clock {
  using time_point = long long;
  static long long now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  }
};

long long ns_since(long long start) { return Clock::now() - start; }

volatile std::uint64_t sink;

int header(const ptn::ByteSpan image, int rounds) {
  const std::uint64_t n = ptn::detail::le64(image.data);
  const simdjson::padded_string text(reinterpret_cast<const char*>(image.data) + 8,
                                     static_cast<std::size_t>(n));
  simdjson::dom::parser parser;
  for (int r = 0; r < rounds; ++r) {
    auto start = Clock::now();
    const auto read = ptn::safetensors::read_header(image);
    const long long ours = ns_since(start);
    if (!read || !read->findings.empty()) {
      std::fprintf(stderr, "the header does not read cleanly\n");
      return 1;
    }
    sink = read->tensors.size();
    start = Clock::now();
    simdjson::dom::element doc;
    const auto error = parser.parse(text).get(doc);
    const long long theirs = ns_since(start);
    if (error) {
      std::fprintf(stderr, "simdjson: %s\n", simdjson::error_message(error));
      return 1;
    }
    std::printf("%lld %lld %zu\n", ours, theirs, read->tensors.size());
  }
  return 0;
}

int deep(const ptn::ByteSpan bytes, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    auto start = Clock::now();
    const ptn::Report report = ptn::validate(bytes, ptn::ValidateOptions{true});
    const long long ours = ns_since(start);
    if (!report.findings.empty()) {
      std::fprintf(stderr, "the package has findings: %s\n", report.findings[0].rule.c_str());
      return 1;
    }
    start = Clock::now();
    uLong crc = crc32(0L, Z_NULL, 0);
    for (std::size_t at = 0; at < bytes.size;) {  // zlib takes at most 4 GiB a call
      const std::size_t n = std::min<std::size_t>(bytes.size - at, 1u << 30);
      crc = crc32(crc, bytes.data + at, static_cast<uInt>(n));
      at += n;
    }
    const long long theirs = ns_since(start);
    sink = crc;
    std::printf("%lld %lld\n", ours, theirs);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_cpp_native check|header|deep FILE [ROUNDS|--deep]\n");
    return 2;
  }
  const std::string mode = argv[1];
  auto file = ptn::MappedFile::open(argv[2]);
  if (!file) {
    std::fprintf(stderr, "%s\n", file.error().what().c_str());
    return 2;
  }
  if (mode == "check") {
    const bool is_deep = argc > 3 && std::strcmp(argv[3], "--deep") == 0;
    return ptn::validate(file->bytes(), ptn::ValidateOptions{is_deep}).valid() ? 0 : 1;
  }
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (mode == "header") return header(file->bytes(), rounds);
  if (mode == "deep") return deep(file->bytes(), rounds);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
