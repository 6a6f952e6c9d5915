// Self-checks of the C++ binding that a differential test against Python cannot make:
// bounded recursion on a small thread stack, the CRC-32 against known values, opening a
// caller's buffer, I/O errors as values. Built -fno-exceptions -fno-rtti under ASan and
// UBSan by tests/test_cpp_package.py:  unit_test PACKAGE.ptn DIRECTORY
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ptn/package.hpp"

namespace {

int failures = 0;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

std::string rule_of(const ptn::Result<ptn::json::Document>& r) {
  return r ? "ok" : r.error().rule();
}

/// Nesting is parsed with a heap stack: a 899-level document and a million '[' both
/// finish on a 64 KiB thread stack, with the reference's rules.
void* nested(void*) {
  const std::string deep = std::string(899, '[') + std::string(899, ']');
  CHECK(rule_of(ptn::json::parse(deep)) == "json-too-deep");  // past 64 levels
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  CHECK(rule_of(ptn::json::parse(ok)) == "ok");
  const std::string cap(1000000, '[');
  CHECK(rule_of(ptn::json::parse(cap)) == "json-too-deep");  // at the parse cap, 900
  std::string objects;
  for (int i = 0; i < 899; ++i) objects += "{\"a\":";
  objects += "1";
  objects += std::string(899, '}');
  const auto parsed = ptn::Metadata::parse(objects);
  CHECK(!parsed && parsed.error().rule() == "json-too-deep");
  return nullptr;
}

void small_stack() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  CHECK(pthread_create(&thread, &attr, nested, nullptr) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

std::size_t crc_calls = 0;

std::uint32_t counting_crc(const void* data, std::size_t size, std::uint32_t crc) {
  ++crc_calls;
  return ptn::crc32(data, size, crc);
}

/// A runtime's own CRC-32 is used by the deep check, with the same findings.
void own_crc(const char* path) {
  const auto file = ptn::MappedFile::open(path);
  CHECK(file.ok());
  if (!file) return;
  const auto ours = ptn::validate(file->bytes(), ptn::ValidateOptions{true, &counting_crc});
  const auto default_crc = ptn::validate(file->bytes(), ptn::ValidateOptions{true});
  CHECK(crc_calls == 4);  // one per member of the example package
  CHECK(ours.findings.size() == default_crc.findings.size() && ours.valid());
}

void crc() {
  const std::string digits = "123456789";
  CHECK(ptn::crc32(digits.data(), digits.size()) == 0xCBF43926u);
  CHECK(ptn::crc32(nullptr, 0) == 0);
  std::vector<unsigned char> data(100003);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 3);
  const std::uint32_t whole = ptn::crc32(data.data(), data.size());
  std::uint32_t pieces = 0;
  for (std::size_t at = 0; at < data.size(); at += 4097) {
    const std::size_t n = std::min<std::size_t>(4097, data.size() - at);
    pieces = ptn::crc32(data.data() + at, n, pieces);
  }
  CHECK(whole == pieces);
}

/// A caller's buffer opens like the file, and views point into that buffer.
void caller_buffer(const char* path) {
  ptn::Result<ptn::MappedFile> file = ptn::MappedFile::open(path);
  CHECK(file.ok());
  if (!file) return;
  const std::vector<std::uint8_t> copy(file->bytes().data, file->bytes().data + file->size());
  const auto from_file = ptn::Package::open_file(path);
  const auto from_span = ptn::Package::open(ptn::ByteSpan(copy.data(), copy.size()));
  CHECK(from_file.ok() && from_span.ok());
  if (!from_file || !from_span) return;
  CHECK(from_file->keys() == from_span->keys());
  CHECK(!from_span->keys().empty());
  for (std::string_view key : from_span->keys()) {
    const auto view = from_span->tensor(key);
    CHECK(view.has_value());
    if (!view) continue;
    CHECK(view->data >= copy.data() && view->data + view->nbytes <= copy.data() + copy.size());
    CHECK(view->numel() * view->itemsize() == view->nbytes);
  }
  CHECK(!from_span->tensor("no such key").has_value());
  const auto program = from_span->program();
  CHECK(program.ok() && program->size >= 8 && program->data > copy.data());
  CHECK(ptn::validate(ptn::ByteSpan(copy.data(), copy.size())).findings.size() ==
        from_file->findings().size());
  const auto missing = from_span->metadata_int("no_such_name");
  CHECK(!missing && missing.error().rule() == "metadata-missing-name");
}

void io_errors(const char* directory) {
  const auto dir = ptn::Package::open_file(directory);
  CHECK(!dir && dir.error().rule() == "ptn-io-error");
  const auto missing = ptn::validate_file(std::string(directory) + "/missing.ptn");
  CHECK(!missing && missing.error().rule() == "ptn-io-error");
  const auto empty = ptn::validate(ptn::ByteSpan());
  CHECK(!empty.valid() && empty.findings.front().rule == "zip-not-a-zip");
  const auto strict = ptn::Package::open(ptn::ByteSpan());
  CHECK(!strict && strict.error().rule() == "zip-not-a-zip");
  const auto lenient = ptn::Package::open(ptn::ByteSpan(), ptn::OpenOptions{false, false});
  CHECK(lenient.ok() && lenient->keys().empty() && !lenient->program().ok());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: unit_test PACKAGE.ptn DIRECTORY\n");
    return 2;
  }
  small_stack();
  crc();
  own_crc(argv[1]);
  caller_buffer(argv[1]);
  io_errors(argv[2]);
  if (failures == 0) std::printf("ok\n");
  return failures == 0 ? 0 : 1;
}
