// Prints what ptn::Package reads from each package, as one JSON document per line, for
// tests/test_cpp_package.py to compare with ptn.load (strict, or lenient with --lenient):
//   {"path", "open": null or [rule, member, pointer], "findings": [[rule, severity, member,
//    pointer, message]...], "program": size or [rule], "methods": [method...] or [rule],
//    "keys", "tensors": {key: [owner, dtype, shape, nbytes, crc32]},
//    "metadata": {...} or null or [rule], "unreadable": [[part, rule]...],
//    "unreadable_keys": [[key, rule]...], "sha256": the package's SHA-256}
// A method is [name, inputs, outputs, constants, mutable buffers]: an input or output is
// [name, spec or null], a constant [name, data_key, spec, kind, mutated], a mutable buffer
// [name, fqn, spec or null], a spec [scalar type, dtype or null, [[min, max]...],
// dim order, quantized].
// Built without exceptions or RTTI, under the sanitizers in the tests.
#include <cstdio>
#include <string>
#include <string_view>

#include "ptn/package.hpp"

namespace {

void str(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void opt(std::string& out, const std::optional<std::string>& s) {
  if (s) {
    str(out, *s);
  } else {
    out += "null";
  }
}

void error(std::string& out, const ptn::Finding& f) {
  out += '[';
  str(out, f.rule);
  out += ',';
  opt(out, f.member);
  out += ',';
  opt(out, f.pointer);
  out += ']';
}

void parts(std::string& out, const std::vector<std::pair<std::string, ptn::Finding>>& list) {
  out += '[';
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i) out += ',';
    out += '[';
    str(out, list[i].first);
    out += ',';
    str(out, list[i].second.rule);
    out += ']';
  }
  out += ']';
}

void spec(std::string& out, const ptn::TensorSpec& t) {
  out += '[' + std::to_string(t.scalar_type) + ',';
  if (t.dtype) {
    str(out, ptn::dtype_name(*t.dtype));
  } else {
    out += "null";
  }
  out += ",[";
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    out += (i ? ",[" : "[") + std::to_string(t.sizes[i].min) + "," +
           std::to_string(t.sizes[i].max) + "]";
  }
  out += "],[";
  for (std::size_t i = 0; i < t.dim_order.size(); ++i) {
    out += (i ? "," : "") + std::to_string(t.dim_order[i]);
  }
  out += std::string("],") + (t.quantized ? "true" : "false") + "]";
}

void maybe_spec(std::string& out, const std::optional<ptn::TensorSpec>& t) {
  if (t) {
    spec(out, *t);
  } else {
    out += "null";
  }
}

void values(std::string& out, const std::vector<ptn::MethodValue>& list) {
  out += '[';
  for (std::size_t i = 0; i < list.size(); ++i) {
    out += i ? ",[" : "[";
    str(out, list[i].name);
    out += ',';
    maybe_spec(out, list[i].spec);
    out += ']';
  }
  out += ']';
}

void methods(std::string& out, const ptn::Package& pkg) {
  const auto list = pkg.methods();
  if (!list) {
    out += '[';
    str(out, list.error().rule());
    out += ']';
    return;
  }
  out += '[';
  for (std::size_t m = 0; m < (*list)->size(); ++m) {
    const ptn::Method& method = (**list)[m];
    out += m ? ",[" : "[";
    str(out, method.name);
    out += ',';
    values(out, method.inputs);
    out += ',';
    values(out, method.outputs);
    out += ",[";
    for (std::size_t i = 0; i < method.constants.size(); ++i) {
      const ptn::BoundConstant& c = method.constants[i];
      out += i ? ",[" : "[";
      str(out, c.name);
      out += ',';
      str(out, c.data_key);
      out += ',';
      spec(out, c.spec);
      out += ',' + std::to_string(c.kind) + (c.mutated ? ",true]" : ",false]");
    }
    out += "],[";
    for (std::size_t i = 0; i < method.mutable_buffers.size(); ++i) {
      const ptn::MutableBuffer& b = method.mutable_buffers[i];
      out += i ? ",[" : "[";
      str(out, b.name);
      out += ',';
      str(out, b.fqn);
      out += ',';
      maybe_spec(out, b.spec);
      out += ']';
    }
    out += "]]";
  }
  out += ']';
}

std::string describe(const std::string& path, bool lenient) {
  std::string out = "{\"path\":";
  str(out, path);
  ptn::Result<ptn::Package> opened =
      ptn::Package::open_file(path, ptn::OpenOptions{!lenient, false});
  out += ",\"open\":";
  if (!opened) {
    error(out, opened.error().finding());
    return out + "}";
  }
  const ptn::Package& pkg = *opened;
  out += "null,\"findings\":[";
  for (std::size_t i = 0; i < pkg.findings().size(); ++i) {
    if (i) out += ',';
    const ptn::Finding& f = pkg.findings()[i];
    out += '[';
    str(out, f.rule);
    out += ',';
    str(out, ptn::severity_name(f.severity));
    out += ',';
    opt(out, f.member);
    out += ',';
    opt(out, f.pointer);
    out += ',';
    str(out, f.message);
    out += ']';
  }
  out += "],\"program\":";
  const ptn::Result<ptn::ByteSpan> program = pkg.program();
  if (program) {
    out += std::to_string(program->size);
  } else {
    out += '[';
    str(out, program.error().rule());
    out += ']';
  }
  out += ",\"methods\":";
  methods(out, pkg);
  out += ",\"keys\":[";
  const std::vector<std::string_view> keys = pkg.keys();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ',';
    str(out, keys[i]);
  }
  out += "],\"tensors\":{";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::optional<ptn::TensorView> t = pkg.tensor(keys[i]);
    if (i) out += ',';
    str(out, keys[i]);
    out += ":[";
    if (!t) {
      out += "null]";
      continue;
    }
    str(out, t->owner);
    out += ',';
    str(out, ptn::dtype_name(t->dtype));
    out += ",[";
    for (std::size_t d = 0; d < t->rank; ++d) out += (d ? "," : "") + std::to_string(t->shape[d]);
    out += "]," + std::to_string(t->nbytes) + ",";
    str(out, ptn::detail::hex(ptn::crc32(t->data, t->nbytes), 8));
    out += ']';
  }
  out += "},\"metadata\":";
  const auto metadata = pkg.metadata();
  if (!metadata) {
    out += '[';
    str(out, metadata.error().rule());
    out += ']';
  } else if (*metadata == nullptr) {
    out += "null";
  } else {
    out += (*metadata)->to_json();
  }
  out += ",\"unreadable\":";
  parts(out, pkg.unreadable_members());
  out += ",\"unreadable_keys\":";
  parts(out, pkg.unreadable_keys());
  out += ",\"sha256\":";
  str(out, pkg.sha256());
  return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
  bool lenient = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--lenient") {
      lenient = true;
      continue;
    }
    std::printf("%s\n", describe(arg, lenient).c_str());
  }
  return 0;
}
