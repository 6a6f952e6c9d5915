// Conformance runner of the C++ binding (the protocol of tools/conformance):
//   conformance_runner FILE...
// For a metadata document: "<path>\tvalid" or "<path>\tinvalid\t<rule-id>".
// For a package (a path ending in .ptn), two lines, the fast check's then the deep check's:
// "<path>\t<fast|deep>\t<valid|invalid>\t<findings>", the findings a JSON list of
// [rule, severity, member, pointer] in the validator's order, written as Python's
// json.dumps(..., ensure_ascii=True, separators=(",", ":")) writes it.
// Built without exceptions or RTTI like the rest of the binding; exit 0 unless an
// argument could not be handled at all.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "ptn/package.hpp"

namespace {

/// Append `s` (generalised UTF-8) as Python's json.dumps(ensure_ascii=True) writes a str.
void append_json(std::string& out, std::string_view s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  auto unit = [&](std::uint32_t u) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
    out += buf;
  };
  for (std::size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) {  // Python escapes all but ' '..'~'
            unit(c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    std::size_t len = 1;
    if (c >= 0xF0 && i + 3 < n) {
      cp = ((c & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) | ((p[i + 2] & 0x3Fu) << 6) |
           (p[i + 3] & 0x3Fu);
      len = 4;
    } else if (c >= 0xE0 && i + 2 < n) {
      cp = ((c & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
      len = 3;
    } else if (c >= 0xC0 && i + 1 < n) {
      cp = ((c & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
      len = 2;
    } else {
      cp = 0xFFFD;  // not reached: every string here is (generalised) UTF-8
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
    i += len;
  }
  out += '"';
}

void append_optional(std::string& out, const std::optional<std::string>& s) {
  if (s) {
    append_json(out, *s);
  } else {
    out += "null";
  }
}

std::string findings_json(const std::vector<ptn::Finding>& findings) {
  std::string out = "[";
  for (const ptn::Finding& f : findings) {
    if (out.size() > 1) out += ',';
    out += '[';
    append_json(out, f.rule);
    out += ',';
    append_json(out, ptn::severity_name(f.severity));
    out += ',';
    append_optional(out, f.member);
    out += ',';
    append_optional(out, f.pointer);
    out += ']';
  }
  return out + "]";
}

void package_lines(const std::string& path) {
  for (const bool deep : {false, true}) {
    ptn::Result<ptn::Report> report = ptn::validate_file(path, ptn::ValidateOptions{deep});
    const std::vector<ptn::Finding> findings =
        report ? report->findings : std::vector<ptn::Finding>{report.error().finding()};
    const bool valid = ptn::first_error(findings) == nullptr;
    std::printf("%s\t%s\t%s\t%s\n", path.c_str(), deep ? "deep" : "fast",
                valid ? "valid" : "invalid", findings_json(findings).c_str());
  }
}

void metadata_line(const std::string& path) {
  ptn::Result<ptn::MappedFile> file = ptn::MappedFile::open(path);
  if (!file) {
    std::printf("%s\tinvalid\tptn-io-error\n", path.c_str());
    return;
  }
  ptn::Result<ptn::Metadata> metadata = ptn::Metadata::parse(file->bytes().chars());
  if (metadata) {
    std::printf("%s\tvalid\n", path.c_str());
  } else {
    std::printf("%s\tinvalid\t%s\n", path.c_str(), metadata.error().rule().c_str());
  }
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string path = argv[i];
    if (ends_with(path, ".ptn")) {
      package_lines(path);
    } else {
      metadata_line(path);
    }
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
