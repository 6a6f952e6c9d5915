// The zip container, stage 2 (ptn/zip/central.py): the central directory, read into one
// checked entry per record. Each entry is checked on its own here (name, encryption,
// version, method, its zip64 values); whether entries agree with the local headers and with
// each other is for ptn/zip_reader.hpp. Where the directory itself breaks, reading stops
// with a finding and the directory is marked incomplete.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"
#include "ptn/json_tape.hpp"
#include "ptn/zip_ends.hpp"

namespace ptn {
namespace zip {
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
  std::uint64_t stored_offset = 0;  // as the directory gives it (zip64 resolved)
  std::uint64_t shift = 0;          // the bytes prepended to the archive

  /// The header offset as messages give it: exact, where header_offset saturates.
  std::string offset_text() const { return ptn::detail::decimal_sum(stored_offset, shift); }

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
  if (flags & ~unsigned{kFlagsWithARule})
    report_flags(e, "central", flags & ~unsigned{kFlagsWithARule}, sink);
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
  e.stored_offset = offset;
  e.shift = shift;
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
    CentralEntry e{
        static_cast<std::uint32_t>(i),
        false,
        b.sub(static_cast<std::size_t>(name_at), static_cast<std::size_t>(extra_at - name_at))
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

}  // namespace detail
}  // namespace zip
}  // namespace ptn
