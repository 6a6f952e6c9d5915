// The strict zip reader for untrusted bytes (ptn/zip/*.py): end records
// (ptn/zip_ends.hpp), central directory (ptn/zip_central.hpp), then here the local headers
// against it, the layout (every byte of the member area owned exactly once) and the
// members. Each stage reports into one ZipSink in the reference's order, so findings come
// out in the same order as in Python and TypeScript. Names are views into the caller's bytes:
// reading a directory of 2^20 entries allocates per entry only what the checks keep.
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
#include "ptn/zip_central.hpp"
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
  /// Flag bit 3: a data descriptor follows the data (zip-data-descriptor).
  bool descriptor = false;
};

/// What the reader found: the members whose data range is sound, in directory order (a
/// duplicated name once per entry), and every finding of the container.
struct Members {
  std::vector<Member> members;
  std::vector<Finding> findings;
};

namespace detail {

// Flag bits that change how a reader finds or decodes a member: local and central agree.
constexpr unsigned kFlagsCompared =
    kFlagEncrypted | kFlagDescriptor | kFlagStrongEncryption | kFlagUtf8;

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
    out.unicode =
        unicode_extra(b.data, static_cast<std::size_t>(extra_at), static_cast<std::size_t>(data));
  }
  out.raw_name =
      b.sub(static_cast<std::size_t>(name_at), static_cast<std::size_t>(extra_at - name_at))
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
inline std::optional<Placed> check_local_header(ByteSpan b, const CentralEntry& e,
                                                std::size_t index, const LocalHeader& local,
                                                std::uint64_t area_end, ZipSink& sink) {
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
    case LocalProblem::None: break;
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
      return std::to_string(end) + " bytes precede " + what + " at offset " + std::to_string(end) +
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
        return "member " + e.label() + " [" + std::to_string(start) + ", " + std::to_string(p.end) +
               ") overlaps member " + o.label() + " [" + std::to_string(o.header_offset) + ", " +
               std::to_string(owner->end) + "); every member owns its bytes";
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
               std::to_string(e.number) + " (first as entry " + std::to_string(seen.first->second) +
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
          Severity::Advice);
    }
    out.members.push_back(Member{e.raw_name, e.header_offset, p.data_offset, e.csize, e.crc32,
                                 e.method, e.usize, fault_of(e), (e.flags & kFlagDescriptor) != 0});
  }
  out.findings = std::move(sink).finish();
  return out;
}

/// zip-descriptor-decoy (ptn/zip/decoy.py): a member with a data descriptor whose stored
/// `data` holds, after k bytes, a descriptor giving k as both sizes. A reader that streams
/// the archive ends the data there and reads the rest as other members: two readers, two
/// packages. It reads the data, so it is a deep check.
inline std::optional<Finding> decoy_finding(ByteSpan data, const Member& m) {
  if (!m.descriptor || m.method != 0) return std::nullopt;
  const std::string_view bytes = data.chars();
  for (std::size_t at = bytes.find("PK\x07\x08"); at != std::string_view::npos;
       at = bytes.find("PK\x07\x08", at + 1)) {
    const std::uint64_t k = at;  // data bytes before the signature
    const std::uint8_t* d = data.data + at;
    const bool narrow =
        at + 16 <= data.size && ptn::detail::le32(d + 8) == k && ptn::detail::le32(d + 12) == k;
    const bool wide =
        at + 24 <= data.size && ptn::detail::le64(d + 8) == k && ptn::detail::le64(d + 16) == k;
    if (narrow || wide) {
      return Finding{"zip-descriptor-decoy",
                     Severity::Error,
                     std::string(m.name),
                     std::nullopt,
                     "member '" + std::string(m.name) +
                         "' (flag bit 3) holds a data descriptor after " + std::to_string(k) +
                         " of its " + std::to_string(m.size) +
                         " data bytes, with those sizes: a reader that ends stored data at its "
                         "descriptor stops there and reads the rest as other members",
                     0};
    }
  }
  return std::nullopt;
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
