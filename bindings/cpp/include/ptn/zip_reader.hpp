// The strict zip reader for untrusted bytes (ptn/zip/*.py), stages 2 to 5 after the end
// records: the central directory, the local headers against it, the layout (every byte
// of the member area owned exactly once), then the members. Each stage reports into one
// ZipSink in the reference's order, so findings come out in the same order as in Python
// and TypeScript. Names are views into the caller's bytes: reading a directory of 2^20
// entries allocates per entry only what the checks keep.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"
#include "ptn/strict_json.hpp"
#include "ptn/zip_ends.hpp"

namespace ptn {
namespace zip {

/// One readable member: where its local header and data are, and the directory's CRC-32.
struct Member {
  std::string_view name;  // a view into the package's bytes
  std::uint64_t header_offset = 0;
  std::uint64_t data_offset = 0;
  /// Bytes stored in the file (the compressed size of a compressed member).
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
  std::uint16_t method = 0;
  /// The declared uncompressed size.
  std::uint64_t usize = 0;
  /// The rule (already reported) that makes the stored bytes other than the content
  /// (zip-member-compressed, zip-member-encrypted), else nullptr: content checks skip it.
  const char* fault = nullptr;
};

/// What the reader found: the members whose data range is sound, in directory order (a
/// duplicated name once per entry), and every finding of the container.
struct Members {
  std::vector<Member> members;
  std::vector<Finding> findings;
};

namespace detail {

/// One central-directory entry, its zip64 values resolved.
struct CentralEntry {
  std::uint32_t number;
  bool has_name;  // false when the name is not valid UTF-8
  std::string_view raw_name;
  std::uint16_t flags;
  std::uint16_t method;
  std::uint32_t crc32;
  std::uint64_t csize;
  std::uint64_t usize;
  std::uint64_t header_offset;  // in the buffer (the shift applied; saturated, never wrapped)

  std::optional<std::string> member() const {
    return has_name ? std::optional<std::string>(std::string(raw_name)) : std::nullopt;
  }
  /// How messages refer to the entry.
  std::string label() const {
    if (has_name) return "'" + std::string(raw_name) + "'";
    return "entry " + std::to_string(number) + " '" + ptn::detail::backslash_replace(raw_name) +
           "'";
  }
};

struct Directory {
  std::vector<CentralEntry> entries;
  bool complete;  // every counted entry was read and resolved
};

inline const char* method_name(unsigned method) noexcept {
  switch (method) {
    case 8: return "deflate";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    case 99: return "AES";
    default: return nullptr;
  }
}

inline void report_unicode_extra(const CentralEntry& e, const char* where, std::uint16_t tag,
                                 ZipSink& sink) {
  sink.add("zip-unicode-path-extra", e.member(), [&] {
    return std::string("the ") + where + " header of member " + e.label() +
           " carries an Info-ZIP Unicode " + (tag == 0x7075 ? "Path" : "Comment") +
           " extra field (0x" + ptn::detail::hex(tag, 4) +
           "); readers that honour it see another name than those that do not, so .ptn "
           "headers carry none";
  });
}

inline void report_flags(const CentralEntry& e, const char* where, unsigned bits, ZipSink& sink) {
  sink.add("zip-bad-flags", e.member(), [&] {
    return std::string("the ") + where + " header of member " + e.label() +
           " sets general-purpose flag bits 0x" + ptn::detail::hex(bits, 4) +
           "; a .ptn member may set only bit 11 (UTF-8 name)";
  });
}

/// The entry's name checks: UTF-8, non-empty, NUL-free.
inline void check_name(CentralEntry& e, ZipSink& sink) {
  e.has_name = json::detail::invalid_utf8_at(e.raw_name) == e.raw_name.size();
  if (!e.has_name) {
    sink.add("zip-bad-member-name", std::nullopt, [&] {
      return "the name of " + e.label() + " is not valid UTF-8; member names are UTF-8";
    });
  } else if (e.raw_name.empty() || e.raw_name.find('\0') != std::string_view::npos) {
    sink.add("zip-bad-member-name", e.member(), [&] {
      return "central directory entry " + std::to_string(e.number) + " has " +
             (e.raw_name.empty() ? "an empty name" : "a name containing a NUL character") +
             "; member names are non-empty and NUL-free";
    });
  }
}

/// A .ptn member is in clear, STORED, and needs no zip feature past zip64.
inline void check_fields(const CentralEntry& e, unsigned needed, ZipSink& sink) {
  const unsigned flags = e.flags;
  if (flags & kFlagsEncryption) {
    sink.add("zip-member-encrypted", e.member(), [&] {
      return "member " + e.label() + " is encrypted (flags 0x" + ptn::detail::hex(flags, 4) +
             "); .ptn members are stored in clear";
    });
  }
  if ((needed & 0xFF) > kVersionZip64) {
    sink.add("zip-unsupported-version", e.member(), [&] {
      const unsigned v = needed & 0xFF;
      return "member " + e.label() + " needs zip version " + std::to_string(v / 10) + "." +
             std::to_string(v % 10) +
             " to extract; stored members with zip64 need at most 4.5, and readers refuse "
             "higher versions (Python's zipfile above 6.3)";
    });
  }
  if (e.method != 0) {
    sink.add("zip-member-compressed", e.member(), [&] {
      const char* known = method_name(e.method);
      return "member " + e.label() + " uses compression method " + std::to_string(e.method) +
             (known ? std::string(" (") + known + ")" : std::string()) +
             "; .ptn members are STORED (method 0) so they can be mapped without copying "
             "(`ptn repack` stores a deflated package's members)";
    });
  } else if (flags & kFlagPatched) {
    sink.add("zip-member-compressed", e.member(), [&] {
      return "member " + e.label() +
             " sets flag bit 5 (compressed patched data); .ptn members are plain STORED data";
    });
  }
  if (flags & kFlagDescriptor) {
    sink.add("zip-data-descriptor", e.member(), [&] {
      return "member " + e.label() +
             " sets flag bit 3 (a data descriptor follows the data); .ptn writers know every "
             "size before the data, and a descriptor lets a reader walking local headers find "
             "the data's end elsewhere than the directory says";
    });
  }
  if (flags & ~unsigned{kFlagsWithARule}) report_flags(e, "central", flags & ~unsigned{kFlagsWithARule}, sink);
}

/// Check entry `e` (its fixed part at `h`) on its own; false when its zip64 values cannot
/// be resolved.
inline bool central_entry(CentralEntry& e, const std::uint8_t* h, const std::uint8_t* buf,
                          std::size_t extra_at, std::size_t extra_end, std::uint64_t shift,
                          ZipSink& sink) {
  const unsigned needed = le16(h + 6);
  const unsigned disk = le16(h + 34);
  check_name(e, sink);
  check_fields(e, needed, sink);
  if (disk != 0) {
    sink.add("zip-not-a-zip", e.member(), [&] {
      return "member " + e.label() + " starts on disk " + std::to_string(disk) +
             "; a .ptn is a single-file archive, so every disk number is 0";
    });
  }
  if (extra_at != extra_end) {
    if (const std::uint16_t tag = unicode_extra(buf, extra_at, extra_end)) {
      report_unicode_extra(e, "central", tag, sink);
    }
  }
  std::uint64_t stored[3] = {le32(h + 24), le32(h + 20), le32(h + 42)};
  const Zip64 z = resolve_zip64(buf, extra_at, extra_end, stored, 3);
  if (z.malformed) {
    sink.add("zip-bad-zip64", e.member(), [&] {
      return "the central extra fields of member " + e.label() +
             " are malformed (a field runs past the block, or zip64 appears twice), so zip64 "
             "values cannot be found";
    });
    if (z.saturated_count) return false;
  } else if (z.saturated_count || z.payload) {
    const std::size_t need = 8 * std::size_t{z.saturated_count} + (disk == kU16Max ? 4 : 0);
    if (!z.payload) {
      sink.add("zip-bad-zip64", e.member(), [&] {
        return "member " + e.label() + " has " + z.saturated_names("none") +
               " 0xFFFFFFFF but no zip64 extra field giving the real value";
      });
    } else {
      if (*z.payload != need) {
        sink.add("zip-bad-zip64", e.member(), [&] {
          return "the zip64 extra field of member " + e.label() + " is " +
                 std::to_string(*z.payload) + " bytes; its saturated fields (" +
                 z.saturated_names("none") + ") need exactly " + std::to_string(need);
        });
      }
      if (!z.resolve(stored, 3)) return false;
    }
  }
  e.usize = stored[0];
  e.csize = stored[1];
  if (e.method == 0 && e.csize != e.usize) {
    sink.add("zip-size-mismatch", e.member(), [&] {
      return "stored member " + e.label() + " has compressed size " + std::to_string(e.csize) +
             " but uncompressed size " + std::to_string(e.usize) +
             "; for a STORED member both are the data length";
    });
  }
  const std::uint64_t offset = stored[2];
  e.header_offset = offset > UINT64_MAX - shift ? UINT64_MAX : offset + shift;
  return true;
}

/// Stage 2: parse the counted entries; stop (with a finding) where the directory breaks.
inline Directory read_directory(ByteSpan b, const EndRecords& ends, ZipSink& sink) {
  Directory dir{{}, true};
  const std::uint64_t count = ends.counted, cd_end = ends.cd_end;
  dir.entries.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, 1 << 16)));
  std::uint64_t pos = ends.cd_start;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (cd_end - pos < 46) {
      sink.add("zip-not-a-zip", std::nullopt, [&] {
        return "the central directory ends after " + std::to_string(i) + " of the " +
               std::to_string(count) + " entries the end record counts";
      });
      dir.complete = false;
      return dir;
    }
    const std::uint8_t* h = b.data + pos;
    if (le32(h) != kSigCdh) {
      sink.add("zip-not-a-zip", std::nullopt, [&] {
        return "central directory entry " + std::to_string(i) + " at offset " +
               std::to_string(pos) +
               " does not start with a central-header signature; the directory is corrupt";
      });
      dir.complete = false;
      return dir;
    }
    const std::uint64_t name_at = pos + 46;
    const std::uint64_t extra_at = name_at + le16(h + 28);
    const std::uint64_t extra_end = extra_at + le16(h + 30);
    const std::uint64_t next_pos = extra_end + le16(h + 32);
    if (next_pos > cd_end) {
      sink.add("zip-not-a-zip", std::nullopt, [&] {
        return "central directory entry " + std::to_string(i) + " at offset " +
               std::to_string(pos) + " runs past the end of the directory (offset " +
               std::to_string(cd_end) + ")";
      });
      dir.complete = false;
      return dir;
    }
    CentralEntry e{static_cast<std::uint32_t>(i),
                   false,
                   b.sub(static_cast<std::size_t>(name_at),
                         static_cast<std::size_t>(extra_at - name_at))
                       .chars(),
                   le16(h + 8),
                   le16(h + 10),
                   le32(h + 16),
                   0,
                   0,
                   0};
    if (central_entry(e, h, b.data, static_cast<std::size_t>(extra_at),
                      static_cast<std::size_t>(extra_end), ends.shift, sink)) {
      dir.entries.push_back(e);
    } else {
      dir.complete = false;
    }
    pos = next_pos;
  }
  if (pos != cd_end) {
    sink.add("zip-not-a-zip", std::nullopt, [&] {
      return std::to_string(cd_end - pos) + " bytes follow the " + std::to_string(count) +
             " entries the end record counts in the central directory: the count is wrong or "
             "entries are hidden";
    });
  }
  return dir;
}

// Flag bits that change how a reader finds or decodes a member: local and central agree.
constexpr unsigned kFlagsCompared = kFlagEncrypted | kFlagDescriptor | kFlagStrongEncryption |
                                    kFlagUtf8;

enum class LocalProblem { None, Outside, NoSignature, Overruns };

/// One local header as its own bytes give it.
struct LocalHeader {
  LocalProblem problem = LocalProblem::None;
  unsigned flags = 0, method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t usize = 0, csize = 0;  // resolved from zip64 where saturated
  std::string_view raw_name;
  std::uint64_t data_offset = 0;
  Zip64 zip64;
  std::uint16_t unicode = 0;
};

/// The local header at `offset` if it lies whole in the member area [0, area_end).
inline LocalHeader read_local_header(ByteSpan b, std::uint64_t offset, std::uint64_t area_end) {
  LocalHeader out;
  if (offset > area_end || area_end - offset < 30) {
    out.problem = LocalProblem::Outside;
    return out;
  }
  const std::uint8_t* h = b.data + offset;
  if (le32(h) != kSigLfh) {
    out.problem = LocalProblem::NoSignature;
    return out;
  }
  const std::uint64_t name_at = offset + 30;
  const std::uint64_t extra_at = name_at + le16(h + 26);
  const std::uint64_t data = extra_at + le16(h + 28);
  if (data > area_end) {
    out.problem = LocalProblem::Overruns;
    return out;
  }
  out.flags = le16(h + 6);
  out.method = le16(h + 8);
  out.crc32 = le32(h + 14);
  std::uint64_t stored[2] = {le32(h + 22), le32(h + 18)};
  out.zip64 = resolve_zip64(b.data, static_cast<std::size_t>(extra_at),
                            static_cast<std::size_t>(data), stored, 2);
  if (out.zip64.saturated_count) out.zip64.resolve(stored, 2);
  out.usize = stored[0];
  out.csize = stored[1];
  if (data != extra_at) {
    out.unicode = unicode_extra(b.data, static_cast<std::size_t>(extra_at),
                                static_cast<std::size_t>(data));
  }
  out.raw_name = b.sub(static_cast<std::size_t>(name_at), static_cast<std::size_t>(extra_at - name_at))
                     .chars();
  out.data_offset = data;
  return out;
}

/// An entry whose local header checked out, and where its bytes are.
struct Placed {
  std::size_t entry;  // index into Directory::entries
  std::uint64_t data_offset;
  std::uint64_t end;  // end of the data, or of the data descriptor when there is one
};

/// End of the data descriptor after `e`'s data; it must repeat the central values.
inline std::uint64_t descriptor_end(ByteSpan b, const CentralEntry& e, std::uint64_t data_end,
                                    std::uint64_t area_end, ZipSink& sink) {
  for (std::uint64_t size : {16u, 24u, 12u, 20u}) {
    const bool with_sig = size == 16 || size == 24;
    if (size > area_end - data_end) continue;
    const std::uint64_t at = data_end + (with_sig ? 4 : 0);
    if (with_sig && !sig_at(b, data_end, kSigDd)) continue;
    const std::uint8_t* d = b.data + at;
    const bool wide = size == 20 || size == 24;
    const std::uint64_t csize = wide ? le64(d + 4) : le32(d + 4);
    const std::uint64_t usize = wide ? le64(d + 12) : le32(d + 8);
    if (le32(d) == e.crc32 && csize == e.csize && usize == e.usize) return data_end + size;
  }
  sink.add("zip-header-mismatch", e.member(), [&] {
    return "member " + e.label() +
           " announces a data descriptor (flag bit 3) but none after its data at offset " +
           std::to_string(data_end) + " repeats the central CRC-32 " +
           ptn::detail::hex(e.crc32, 8) + " and size " + std::to_string(e.csize);
  });
  return data_end;
}

/// Stage 4: `e`'s local header against `e`; nullopt when its data cannot be placed.
inline std::optional<Placed> check_local_header(ByteSpan b, const CentralEntry& e, std::size_t index,
                                                const LocalHeader& local, std::uint64_t area_end,
                                                ZipSink& sink) {
  const std::uint64_t h = e.header_offset;
  switch (local.problem) {
    case LocalProblem::Outside:
      sink.add("zip-member-out-of-bounds", e.member(), [&] {
        return "member " + e.label() + ": local header offset " + std::to_string(h) +
               " is not inside the member area [0, " + std::to_string(area_end) +
               ") before the central directory";
      });
      return std::nullopt;
    case LocalProblem::NoSignature:
      sink.add("zip-header-mismatch", e.member(), [&] {
        return "member " + e.label() + ": the central directory points at offset " +
               std::to_string(h) + ", where there is no local header";
      });
      return std::nullopt;
    case LocalProblem::Overruns:
      sink.add("zip-member-out-of-bounds", e.member(), [&] {
        return "member " + e.label() + ": the local header at offset " + std::to_string(h) +
               " (with name and extra fields) runs into the central directory at offset " +
               std::to_string(area_end);
      });
      return std::nullopt;
    case LocalProblem::None:
      break;
  }
  std::string mismatches;
  auto mismatch = [&](const std::string& what) {
    mismatches += (mismatches.empty() ? "" : "; ") + what;
  };
  if (local.raw_name != e.raw_name) {
    mismatch("name '" + ptn::detail::backslash_replace(local.raw_name) + "'");
  }
  if ((local.flags ^ e.flags) & kFlagsCompared) {
    mismatch("flags 0x" + ptn::detail::hex(local.flags, 4) + " (central 0x" +
             ptn::detail::hex(e.flags, 4) + ")");
  }
  if (local.method != e.method) {
    mismatch("method " + std::to_string(local.method) + " (central " + std::to_string(e.method) +
             ")");
  }
  const Zip64& z = local.zip64;
  const std::size_t need = 8 * std::size_t{z.saturated_count};
  if (z.malformed) {
    sink.add("zip-bad-zip64", e.member(), [&] {
      return "the local extra fields of member " + e.label() +
             " are malformed (a field runs past the block, or zip64 appears twice)";
    });
  } else if (z.saturated_count && !z.has_real) {
    sink.add("zip-bad-zip64", e.member(), [&] {
      return "the local header of member " + e.label() +
             " has 32-bit sizes 0xFFFFFFFF but no zip64 extra field large enough to give the "
             "real sizes";
    });
  } else if (z.payload && *z.payload != need) {
    sink.add("zip-bad-zip64", e.member(), [&] {
      return "the local zip64 extra field of member " + e.label() + " is " +
             std::to_string(*z.payload) + " bytes; its saturated sizes (" +
             z.saturated_names("none") + ") need exactly " + std::to_string(need);
    });
  }
  if (const unsigned local_only = local.flags & ~unsigned{e.flags} & ~kFlagsCompared) {
    report_flags(e, "local", local_only, sink);
  }
  if (local.unicode) report_unicode_extra(e, "local", local.unicode, sink);
  const bool descriptor = (e.flags & kFlagDescriptor) && (local.flags & kFlagDescriptor);
  struct Pair {
    const char* what;
    std::uint64_t value, central;
  };
  const Pair pairs[] = {{"CRC-32", local.crc32, e.crc32},
                        {"compressed size", local.csize, e.csize},
                        {"uncompressed size", local.usize, e.usize}};
  for (const Pair& p : pairs) {
    if (p.value != p.central && !(descriptor && p.value == 0)) {
      mismatch(std::string(p.what) + " " + std::to_string(p.value) + " (central " +
               std::to_string(p.central) + ")");
    }
  }
  if (!mismatches.empty()) {
    sink.add("zip-header-mismatch", e.member(), [&] {
      return "the local header of member " + e.label() + " at offset " + std::to_string(h) +
             " disagrees with the central directory: " + mismatches;
    });
  }
  const std::uint64_t data = local.data_offset;
  if (e.csize > area_end - data) {
    sink.add("zip-member-out-of-bounds", e.member(), [&] {
      const std::uint64_t end = e.csize > UINT64_MAX - data ? UINT64_MAX : data + e.csize;
      return "member " + e.label() + ": data [" + std::to_string(data) + ", " +
             std::to_string(end) + ") runs past the start of the central directory at offset " +
             std::to_string(area_end);
    });
    return std::nullopt;
  }
  std::uint64_t end = data + e.csize;
  if (descriptor) end = descriptor_end(b, e, end, area_end, sink);
  return Placed{index, data, end};
}

/// Report bytes in the member area that no entry accounts for.
inline void gap(const Directory& dir, std::uint64_t begin, std::uint64_t end, const Placed* owner,
                const std::string& what, std::uint64_t shift, ZipSink& sink) {
  if (owner == nullptr && shift == 0) {
    sink.add("zip-data-before-archive", std::nullopt, [&] {
      return std::to_string(end) + " bytes precede " + what + " at offset " +
             std::to_string(end) +
             " and belong to no member; a .ptn starts with its first local header at offset 0";
    });
  } else {
    sink.add("zip-unreferenced-data", std::nullopt, [&] {
      const std::string after = owner ? "the end of member " + dir.entries[owner->entry].label()
                                      : std::string("the prepended bytes");
      return std::to_string(end - begin) + " bytes between " + after + " (offset " +
             std::to_string(begin) + ") and " + what + " (offset " + std::to_string(end) +
             ") belong to no member; hidden bytes can carry a decoy local header";
    });
  }
}

/// Stage 5: overlapping member ranges, and (when `complete`) the bytes no member owns.
inline void check_layout(const Directory& dir, std::vector<Placed> spans, bool complete,
                         const EndRecords& ends, ZipSink& sink) {
  std::stable_sort(spans.begin(), spans.end(), [&](const Placed& a, const Placed& b) {
    const std::uint64_t ha = dir.entries[a.entry].header_offset;
    const std::uint64_t hb = dir.entries[b.entry].header_offset;
    return ha != hb ? ha < hb : a.end < b.end;
  });
  std::uint64_t cursor = ends.shift;
  const Placed* owner = nullptr;
  for (const Placed& p : spans) {
    const CentralEntry& e = dir.entries[p.entry];
    const std::uint64_t start = e.header_offset;
    if (owner != nullptr && start < cursor) {
      const CentralEntry& o = dir.entries[owner->entry];
      sink.add("zip-overlapping-entries", e.member(), [&] {
        return "member " + e.label() + " [" + std::to_string(start) + ", " +
               std::to_string(p.end) + ") overlaps member " + o.label() + " [" +
               std::to_string(o.header_offset) + ", " + std::to_string(owner->end) +
               "); every member owns its bytes";
      });
    } else if (start > cursor && complete) {
      gap(dir, cursor, start, owner, "the local header of member " + e.label(), ends.shift, sink);
    }
    if (p.end > cursor) {
      cursor = p.end;
      owner = &p;
    }
  }
  if (cursor < ends.cd_start && complete) {
    gap(dir, cursor, ends.cd_start, owner, "the central directory", ends.shift, sink);
  }
}

/// The rule (already reported) that makes `e`'s stored bytes other than its content.
inline const char* fault_of(const CentralEntry& e) noexcept {
  if (e.flags & kFlagsEncryption) return "zip-member-encrypted";
  if (e.method != 0 || (e.flags & kFlagPatched)) return "zip-member-compressed";
  return nullptr;
}

}  // namespace detail

/// Read and cross-check the zip directory of `b` without copying it (ptn.zip.read_members).
/// An Error only when no directory can be read at all.
inline Result<Members> read_members(ByteSpan b) {
  using namespace detail;
  ZipSink sink;
  auto located = locate_directory(b, sink);
  if (!located) return std::move(located).error();
  const EndRecords ends = *located;
  const Directory dir = read_directory(b, ends, sink);
  std::vector<Placed> placed;
  placed.reserve(dir.entries.size());
  // Each local header is parsed once, however many entries point at it.
  std::unordered_map<std::uint64_t, LocalHeader> headers;
  std::unordered_map<std::string_view, std::uint32_t> first;
  for (std::size_t i = 0; i < dir.entries.size(); ++i) {
    const CentralEntry& e = dir.entries[i];
    auto it = headers.find(e.header_offset);
    if (it == headers.end()) {
      it = headers.emplace(e.header_offset, read_local_header(b, e.header_offset, ends.cd_start))
               .first;
    }
    if (auto p = check_local_header(b, e, i, it->second, ends.cd_start, sink)) placed.push_back(*p);
    if (!e.has_name) continue;
    const auto seen = first.emplace(e.raw_name, e.number);
    if (!seen.second) {
      sink.add("zip-duplicate-member", e.member(), [&] {
        return "member " + e.label() + " appears again as central directory entry " +
               std::to_string(e.number) + " (first as entry " +
               std::to_string(seen.first->second) +
               "); readers disagree on which one they return, so names must be unique";
      });
    }
  }
  const bool complete = dir.complete && placed.size() == dir.entries.size();
  check_layout(dir, placed, complete, ends, sink);
  Members out;
  out.members.reserve(placed.size());
  for (const Placed& p : placed) {
    const CentralEntry& e = dir.entries[p.entry];
    if (!e.has_name) continue;
    if (p.data_offset % kAlignment) {
      sink.add(
          "zip-unaligned-member", e.member(),
          [&] {
            return "the data of member " + e.label() + " starts at offset " +
                   std::to_string(p.data_offset) + ", " +
                   std::to_string(p.data_offset % kAlignment) + " past a multiple of " +
                   std::to_string(kAlignment) +
                   "; aligned data can be viewed without copying by every consumer (`ptn "
                   "repack` aligns it, keeping every byte of content)";
          },
          Severity::Warning);
    }
    out.members.push_back(Member{e.raw_name, e.header_offset, p.data_offset, e.csize, e.crc32,
                                 e.method, e.usize, fault_of(e)});
  }
  out.findings = std::move(sink).finish();
  return out;
}

/// The members whose CRC-32 deep validation checks, by offset: none starts inside another
/// (each byte is read at most once), and none whose stored bytes are not its content.
inline std::vector<Member> crc_targets(const std::vector<Member>& members) {
  std::vector<Member> sorted = members;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Member& a, const Member& b) {
    return a.data_offset != b.data_offset ? a.data_offset < b.data_offset : a.size < b.size;
  });
  std::vector<Member> out;
  std::uint64_t checked_to = 0;
  for (const Member& m : sorted) {
    if (m.data_offset < checked_to) continue;
    checked_to = m.data_offset + m.size;
    if (m.fault == nullptr) out.push_back(m);
  }
  return out;
}

}  // namespace zip
}  // namespace ptn
