// libFuzzer harness over whole packages: the bytes are a .ptn, checked fast and deep and
// opened strict and lenient, then everything the package offers is read. Built by
// .ci/fuzz-cpp.sh with clang -fsanitize=fuzzer,address,undefined -fno-exceptions -fno-rtti:
// a sanitizer report, or a broken property below, is a finding (the input is saved).
//
// Properties (those of ptn.testing.fuzz.check, for the C++ binding):
//  - every finding's rule is a rule of spec.md (never ptn-internal-error);
//  - the fast check's findings are the deep check's, less the data rules (CRC-32, decoy
//    descriptors, BOOL);
//  - a strict open succeeds exactly when the fast check finds no error, and fails with
//    its first error; a lenient open always succeeds and carries the fast findings;
//  - every key a package lists gives a tensor view inside the package's bytes, whose size
//    is its element count times the element size; metadata and program read;
//  - the methods read exactly when the program's tables were (else the rule why is one of
//    the findings); in a package with no error, every constant a method binds has a view,
//    of the dtype and within the dimension ranges the program gives it (unless quantized);
//  - the lean header pass accepts a safetensors header only when the full check (the
//    strict-JSON tape, every rule) finds nothing, and then reads the same entries.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ptn/package.hpp"

namespace {

[[noreturn]] void broken(const char* property) {
  std::fprintf(stderr, "fuzz_package: property broken: %s\n", property);
  std::abort();
}

#define REQUIRE(cond)           \
  do {                          \
    if (!(cond)) broken(#cond); \
  } while (0)

bool data_rule(const std::string& rule) {
  return rule == "zip-crc-mismatch" || rule == "zip-descriptor-decoy" ||
         rule == "st-bool-not-0-or-1";
}

bool same(const ptn::Finding& a, const ptn::Finding& b) {
  return a.rule == b.rule && a.severity == b.severity && a.member == b.member &&
         a.pointer == b.pointer && a.more == b.more;
}

bool has_rule(const std::vector<ptn::Finding>& findings, const std::string& rule) {
  for (const ptn::Finding& f : findings) {
    if (f.rule == rule) return true;
  }
  return false;
}

/// The methods against the package's own findings and views.
void read_methods(const ptn::Package& pkg) {
  const auto methods = pkg.methods();
  if (!methods) {
    const std::string& rule = methods.error().rule();
    REQUIRE(has_rule(pkg.findings(), rule) || !pkg.program().ok());
    REQUIRE(!pkg.valid() || rule == "ptg-unknown-version" || rule == "ptg-too-large");
    return;
  }
  REQUIRE(!(*methods)->empty() || !pkg.valid());  // ptg-no-methods is an error
  if (!pkg.valid()) return;
  for (const ptn::Method& m : **methods) {
    REQUIRE(!m.name.empty());
    for (const ptn::BoundConstant& c : m.constants) {
      const std::optional<ptn::TensorView> view = pkg.tensor(c.data_key);
      REQUIRE(view.has_value());
      if (!view || c.spec.quantized) continue;
      REQUIRE(c.spec.dtype == view->dtype);
      REQUIRE(c.spec.admits(view->shape, view->rank));
    }
  }
}

void read_everything(const ptn::Package& pkg, ptn::ByteSpan bytes) {
  volatile unsigned sink = 0;
  for (const std::string_view key : pkg.keys()) {
    const std::optional<ptn::TensorView> t = pkg.tensor(key);
    REQUIRE(t.has_value());
    REQUIRE(t->numel() * t->itemsize() == t->nbytes);
    REQUIRE(t->data >= bytes.data && t->data + t->nbytes <= bytes.data + bytes.size);
    if (t->nbytes) sink = sink + t->data[0] + t->data[t->nbytes - 1];
  }
  if (const auto program = pkg.program()) {
    if (program->size) sink = sink + program->data[program->size - 1];
  }
  read_methods(pkg);
  if (const auto metadata = pkg.metadata(); metadata && *metadata) {
    const std::string text = (*metadata)->to_json();
    REQUIRE(ptn::json::parse(text).ok());
    for (const std::string& name : (*metadata)->names()) REQUIRE((*metadata)->kind(name).ok());
  }
}

/// The lean pass and the full check over the header of the input's program.safetensors.
void headers_agree(ptn::ByteSpan bytes) {
  const auto members = ptn::zip::read_members(bytes);
  if (!members) return;
  for (const ptn::zip::Member& m : members->members) {
    if (m.name != ptn::kSafetensorsMember || m.fault != nullptr) continue;
    const ptn::ByteSpan st = bytes.sub(m.data_offset, m.size);
    if (st.size < 8) continue;
    const std::uint64_t n = ptn::detail::le64(st.data);
    if (n > st.size - 8) continue;
    const std::string_view text = st.sub(8, n).chars();
    ptn::safetensors::TensorTable lean;
    if (!ptn::safetensors::detail::LeanHeader(text, 8 + n, st.size - 8 - n, lean).run()) continue;
    const auto doc = ptn::json::parse(text);
    REQUIRE(doc.ok() && doc->type(0) == ptn::json::Type::Object);
    ptn::safetensors::Header full;
    ptn::safetensors::detail::check_entries(*doc, 8 + n, st.size - 8 - n, full);
    REQUIRE(full.findings.empty());
    REQUIRE(full.tensors.size() == lean.size());
    for (std::size_t i = 0; i < lean.size(); ++i) {
      const auto& a = lean.entry(i);
      const auto& b = full.tensors.entry(i);
      REQUIRE(lean.key(i) == full.tensors.key(i) && a.dtype == b.dtype && a.rank == b.rank &&
              a.begin == b.begin && a.end == b.end);
      for (std::size_t d = 0; d < a.rank; ++d)
        REQUIRE(lean.shape(i)[d] == full.tensors.shape(i)[d]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ptn::ByteSpan bytes(data, size);
  const ptn::Report fast = ptn::validate(bytes);
  const ptn::Report deep = ptn::validate(bytes, ptn::ValidateOptions{true});
  for (const ptn::Report* report : {&fast, &deep}) {
    for (const ptn::Finding& f : report->findings) {
      REQUIRE(f.rule != "ptn-internal-error");
      REQUIRE(!f.message.empty());
    }
  }
  // Listed findings (not summaries): fast's are the start of deep's, the rest data rules.
  std::size_t d = 0;
  for (const ptn::Finding& f : fast.findings) {
    if (f.more) continue;
    while (d < deep.findings.size() && deep.findings[d].more) ++d;
    REQUIRE(d < deep.findings.size() && same(f, deep.findings[d]));
    ++d;
  }
  for (; d < deep.findings.size(); ++d) {
    REQUIRE(deep.findings[d].more || data_rule(deep.findings[d].rule));
  }

  const ptn::Result<ptn::Package> strict = ptn::Package::open(bytes);
  REQUIRE(strict.ok() == fast.valid());
  if (!strict) {
    REQUIRE(same(strict.error().finding(), *fast.first_error()));
  } else {
    read_everything(*strict, bytes);
  }
  const ptn::Result<ptn::Package> lenient =
      ptn::Package::open(bytes, ptn::OpenOptions{false, false});
  REQUIRE(lenient.ok());
  REQUIRE(lenient->findings().size() == fast.findings.size());
  read_everything(*lenient, bytes);
  headers_agree(bytes);
  return 0;
}
