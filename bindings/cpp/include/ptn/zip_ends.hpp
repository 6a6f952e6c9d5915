// The zip container, stage 1 and the zip64 extra fields (ptn/zip/ends.py, ptn/zip/zip64.py).
//
// The end record must end the file (no comment, nothing appended); a zip64 locator and
// record, when present, must agree with it. Bytes prepended to the archive are detected
// here and become the `shift` every later stage applies to stored offsets. Every size and
// offset read from the file is compared with the file's length before use, in 64-bit
// arithmetic that cannot wrap: hostile values cost nothing and mean nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"

namespace ptn {
namespace zip {

inline constexpr std::uint64_t kMaxMembers = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kAlignment = 64;
inline constexpr std::uint16_t kU16Max = 0xFFFF;
inline constexpr std::uint32_t kU32Max = 0xFFFFFFFF;
inline constexpr std::uint16_t kZip64ExtraId = 0x0001;

inline constexpr std::uint32_t kSigLfh = 0x04034b50;
inline constexpr std::uint32_t kSigCdh = 0x02014b50;
inline constexpr std::uint32_t kSigEocd = 0x06054b50;
inline constexpr std::uint32_t kSigLoc64 = 0x07064b50;
inline constexpr std::uint32_t kSigEocd64 = 0x06064b50;
inline constexpr std::uint32_t kSigDd = 0x08074b50;

inline constexpr std::uint16_t kFlagEncrypted = 0x0001;
inline constexpr std::uint16_t kFlagDescriptor = 0x0008;
inline constexpr std::uint16_t kFlagPatched = 0x0020;
inline constexpr std::uint16_t kFlagStrongEncryption = 0x0040;
inline constexpr std::uint16_t kFlagUtf8 = 0x0800;
inline constexpr std::uint16_t kFlagMaskedHeaders = 0x2000;
inline constexpr std::uint16_t kFlagsEncryption =
    kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders;
/// The flag bits a rule of its own speaks about; any other set bit is zip-bad-flags.
inline constexpr std::uint16_t kFlagsWithARule = kFlagEncrypted | kFlagDescriptor | kFlagPatched |
                                                 kFlagStrongEncryption | kFlagUtf8 |
                                                 kFlagMaskedHeaders;
inline constexpr unsigned kVersionZip64 = 45;

namespace detail {

using ptn::detail::le16;
using ptn::detail::le32;
using ptn::detail::le64;
using ptn::detail::ZipSink;

/// Whether the 4-byte signature `sig` is at `offset`, inside the buffer.
inline bool sig_at(ByteSpan b, std::uint64_t offset, std::uint32_t sig) noexcept {
  return offset <= b.size && b.size - offset >= 4 &&
         le32(b.data + static_cast<std::size_t>(offset)) == sig;
}

inline Error zip_error(const char* rule, std::string message) {
  return Error(rule, std::move(message));
}

/// Where the central directory is, in buffer positions.
struct EndRecords {
  std::uint64_t counted;  // entries the end records count
  std::uint64_t cd_start;
  std::uint64_t cd_end;
  std::uint64_t shift;  // bytes prepended to the archive: added to every stored offset
};

/// The zip64 end records, when a locator is there.
struct Zip64End {
  std::uint64_t records;  // where the zip64 end record starts
  std::uint64_t counted;
  std::uint64_t cd_size;
  std::uint64_t cd_offset;
  std::optional<std::uint64_t> shift;  // rec - locator's offset; nullopt when negative
  std::uint64_t locator_offset;
};

constexpr std::size_t kEocdSearch = 22 + 0xFFFF;  // end record plus the longest comment

/// Offset of the end record: the last one that ends the file, else the last one.
inline Result<std::uint64_t> find_eocd(ByteSpan b) {
  const std::size_t n = b.size;
  if (n >= 22 && le32(b.data + n - 22) == kSigEocd && le16(b.data + n - 2) == 0) {
    return static_cast<std::uint64_t>(n - 22);
  }
  const std::size_t start = n > kEocdSearch ? n - kEocdSearch : 0;
  std::optional<std::uint64_t> fallback;
  for (std::size_t i = n >= 4 ? n - 4 : 0; n >= 4 && i + 1 > start; --i) {
    if (b.data[i] == 0x50 && le32(b.data + i) == kSigEocd && i + 22 <= n) {
      if (i + 22 + le16(b.data + i + 20) == n) return static_cast<std::uint64_t>(i);
      if (!fallback) fallback = i;
    }
    if (i == 0) break;
  }
  if (fallback) return *fallback;
  if (sig_at(b, 0, kSigLfh)) {
    return zip_error("zip-truncated",
                     "the " + std::to_string(n) +
                         "-byte file starts like a zip archive but has no end-of-central-"
                         "directory record: it was cut short; copy or download it again");
  }
  if (n >= 8 && std::string_view(reinterpret_cast<const char*>(b.data) + 4, 4) == "ET12") {
    // An ExecuTorch .pte (a FlatBuffer, identifier ET12): the usual wrong file to hand in.
    return zip_error("zip-not-a-zip",
                     "this is an ExecuTorch program (a .pte file: identifier ET12 "
                     "at bytes 4..8), not a .ptn package, which is a zip archive holding pro"
                     "gram.ptg; write a .ptn from the export with ptn.executorch.save(programs, 'model.ptn')");
  }
  return zip_error("zip-not-a-zip",
                   "no end-of-central-directory record in the last " +
                       std::to_string(n < kEocdSearch ? n : kEocdSearch) +
                       " bytes: this file is not a zip archive, and a .ptn is one");
}

/// Nothing may follow the end record: no comment, no appended bytes.
inline void check_tail(std::uint64_t n, std::uint64_t p, std::uint64_t comment_len, ZipSink& sink) {
  const std::uint64_t after = n - (p + 22);
  if (comment_len > after) {
    sink.add("zip-truncated", std::nullopt, [&] {
      return "the end record declares a " + std::to_string(comment_len) +
             "-byte comment but only " + std::to_string(after) +
             " bytes follow it: the file was cut short";
    });
  } else if (comment_len && comment_len == after) {
    sink.add("zip-trailing-data", std::nullopt, [&] {
      return "the end record carries a " + std::to_string(comment_len) +
             "-byte archive comment; a .ptn ends with its end record and has an empty comment";
    });
  } else if (after) {
    sink.add("zip-trailing-data", std::nullopt, [&] {
      return std::to_string(after) +
             " bytes follow the end-of-central-directory record at offset " + std::to_string(p) +
             "; nothing may follow it (was something appended to the file?)";
    });
  }
}

/// The fields of the 32-bit end record that zip64 may replace.
struct Eocd {
  std::uint16_t disk, disk_cd, n_disk, n_total;
  std::uint32_t cd_size, cd_offset;
};

/// The zip64 end records before the end record at `p`, if a locator is there.
inline Result<std::optional<Zip64End>> read_zip64(ByteSpan b, std::uint64_t p, const Eocd& e,
                                                  ZipSink& sink) {
  if (p < 20 || !sig_at(b, p - 20, kSigLoc64)) return std::optional<Zip64End>{};
  const std::uint64_t loc = p - 20;
  const std::uint8_t* l = b.data + loc;
  const std::uint32_t z_disk = le32(l + 4);
  const std::uint64_t z_off = le64(l + 8);
  const std::uint32_t disks = le32(l + 16);
  if (z_disk != 0 || disks > 1) {
    return zip_error("zip-not-a-zip", "the zip64 locator describes an archive split over " +
                                          std::to_string(disks) +
                                          " disks; a .ptn is a single-file archive");
  }
  const bool saturated = e.n_total == kU16Max || e.cd_size == kU32Max || e.cd_offset == kU32Max;
  std::optional<std::uint64_t> rec;
  if (loc >= 56 && z_off <= loc - 56 && sig_at(b, z_off, kSigEocd64)) {
    rec = z_off;
  } else if (loc >= 56 && sig_at(b, loc - 56, kSigEocd64)) {
    rec = loc - 56;
  }
  if (!rec) {
    const std::string message =
        "a zip64 locator precedes the end record but no zip64 end record is at offset " +
        std::to_string(z_off) + " (or just before the locator)";
    if (saturated) return zip_error("zip-bad-zip64", message + "; the directory cannot be located");
    sink.add("zip-bad-zip64", std::nullopt,
             [&] { return message + "; using the 32-bit end record"; });
    return std::optional<Zip64End>{};
  }
  const std::uint8_t* z = b.data + *rec;
  const std::uint64_t rest = le64(z + 4);
  const std::uint32_t disk = le32(z + 16);
  const std::uint32_t disk_cd = le32(z + 20);
  const std::uint64_t n_disk = le64(z + 24);
  const std::uint64_t n_total = le64(z + 32);
  const std::uint64_t cd_size = le64(z + 40);
  const std::uint64_t cd_offset = le64(z + 48);
  if (rest < 44 || rest != loc - *rec - 12) {
    sink.add("zip-bad-zip64", std::nullopt, [&] {
      return "the zip64 end record at offset " + std::to_string(*rec) + " declares " +
             std::to_string(rest) + " more bytes, but " + std::to_string(loc - *rec - 12) +
             " lie between its size field and the locator";
    });
  } else if (rest != 44) {
    sink.add("zip-bad-zip64", std::nullopt, [&] {
      return "the zip64 end record at offset " + std::to_string(*rec) + " carries " +
             std::to_string(rest - 44) +
             " bytes of extensible data after its 44 bytes of fields; a .ptn has none";
    });
  }
  if (disk != 0 || disk_cd != 0 || n_disk != n_total) {
    return zip_error("zip-not-a-zip",
                     "the zip64 end record describes an archive split over several disks; a "
                     ".ptn is a single-file archive");
  }
  struct Check {
    const char* what;
    std::uint64_t short_value, saturated, full;
  };
  const Check checks[] = {{"entry count", e.n_total, kU16Max, n_total},
                          {"directory size", e.cd_size, kU32Max, cd_size},
                          {"directory offset", e.cd_offset, kU32Max, cd_offset}};
  for (const Check& c : checks) {
    if (c.short_value != c.saturated && c.short_value != c.full) {
      sink.add("zip-bad-zip64", std::nullopt, [&] {
        return std::string("the end record gives ") + c.what + " " + std::to_string(c.short_value) +
               " but the zip64 end record gives " + std::to_string(c.full) +
               "; the 32-bit field must equal it or be 0x" +
               (c.saturated == kU16Max ? "FFFF" : "FFFFFFFF");
      });
    }
  }
  std::optional<std::uint64_t> shift;
  if (z_off <= *rec) shift = *rec - z_off;
  return std::optional<Zip64End>(Zip64End{*rec, n_total, cd_size, cd_offset, shift, z_off});
}

/// Stage 1: parse the end records and place the central directory in the buffer.
inline Result<EndRecords> locate_directory(ByteSpan b, ZipSink& sink) {
  const std::uint64_t n = b.size;
  auto found = find_eocd(b);
  if (!found) return std::move(found).error();
  const std::uint64_t p = *found;
  const std::uint8_t* r = b.data + p;
  const Eocd e{le16(r + 4), le16(r + 6), le16(r + 8), le16(r + 10), le32(r + 12), le32(r + 16)};
  check_tail(n, p, le16(r + 20), sink);
  auto read = read_zip64(b, p, e, sink);
  if (!read) return std::move(read).error();
  const std::optional<Zip64End>& zip64 = *read;
  std::uint64_t records = p, count = e.n_total, cd_size = e.cd_size, cd_offset = e.cd_offset;
  if (!zip64) {
    if (e.disk != 0 || e.disk_cd != 0 || e.n_disk != e.n_total) {
      return zip_error("zip-not-a-zip",
                       "the end record describes an archive split over disks (disk " +
                           std::to_string(e.disk) + ", directory on disk " +
                           std::to_string(e.disk_cd) + "); a .ptn is a single-file archive");
    }
  } else {
    records = zip64->records;
    count = zip64->counted;
    cd_size = zip64->cd_size;
    cd_offset = zip64->cd_offset;
    if ((e.disk != 0 && e.disk != kU16Max) || (e.disk_cd != 0 && e.disk_cd != kU16Max)) {
      return zip_error("zip-not-a-zip",
                       "the end record describes an archive split over disks; a .ptn is a "
                       "single-file archive");
    }
  }
  if (count > kMaxMembers) {
    return zip_error("zip-too-many-members", "the end record counts " + std::to_string(count) +
                                                 " members; at most " +
                                                 std::to_string(kMaxMembers) + " are allowed");
  }
  std::uint64_t shift = 0;
  // cd_offset + cd_size compared with records and n without ever computing a sum that wraps.
  const bool fits_before = cd_size <= records;
  if (fits_before && cd_offset == records - cd_size) {
    // where the end record says
  } else if (fits_before && cd_offset < records - cd_size &&
             (cd_size == 0 || sig_at(b, records - cd_size, kSigCdh))) {
    shift = records - cd_size - cd_offset;
    sink.add("zip-data-before-archive", std::nullopt, [&] {
      return "the central directory is " + std::to_string(shift) + " bytes after the offset " +
             std::to_string(cd_offset) + " the end record gives: " + std::to_string(shift) +
             " bytes were prepended to the archive (a stub or a concatenated file); a .ptn "
             "starts with its first local header";
    });
  } else if (fits_before && cd_offset < records - cd_size &&
             (cd_size == 0 || sig_at(b, cd_offset, kSigCdh))) {
    sink.add("zip-unreferenced-data", std::nullopt, [&] {
      return std::to_string(records - cd_offset - cd_size) +
             " bytes between the end of the central directory (offset " +
             std::to_string(cd_offset + cd_size) + ") and the end records belong to no record";
    });
  } else if (cd_size > n || cd_offset > n - cd_size) {
    return zip_error("zip-truncated", "the central directory (offset " + std::to_string(cd_offset) +
                                          ", " + std::to_string(cd_size) +
                                          " bytes) runs past the end of the " + std::to_string(n) +
                                          "-byte file: the file was cut short");
  } else {
    return zip_error("zip-not-a-zip",
                     "the central directory (offset " + std::to_string(cd_offset) + ", " +
                         std::to_string(cd_size) +
                         " bytes) does not end where the end records begin (offset " +
                         std::to_string(records) + "); the directory cannot be read");
  }
  if (zip64 && zip64->shift != shift) {
    sink.add("zip-bad-zip64", std::nullopt, [&] {
      const std::string off = zip64->shift
                                  ? std::to_string(*zip64->shift)
                                  : "-" + std::to_string(zip64->locator_offset - zip64->records);
      return "the zip64 locator's offset is off by " + off + " bytes but the directory offset by " +
             std::to_string(shift) + "; both must point at the real records";
    });
  }
  const std::uint64_t cd_start = cd_offset + shift;
  return EndRecords{count, cd_start, cd_start + cd_size, shift};
}

// ---- zip64 extra fields (ptn/zip/zip64.py) ----

inline constexpr const char* kZip64Fields[] = {"uncompressed size", "compressed size",
                                               "local header offset"};

/// What one header's extra block says about its zip64 values.
struct Zip64 {
  bool malformed = false;
  /// Which of the header's values (indices into kZip64Fields) are 0xFFFFFFFF, in order.
  unsigned saturated_mask = 0;
  unsigned saturated_count = 0;
  /// Length of the zip64 field; nullopt when there is none (or the block is malformed).
  std::optional<std::size_t> payload;
  /// The real values of the saturated fields, in order, when a long enough field gives them.
  bool has_real = false;
  std::uint64_t real[3] = {0, 0, 0};

  /// `values` with the saturated ones replaced; false when one is saturated and its real
  /// value is missing.
  bool resolve(std::uint64_t* values, std::size_t count) const noexcept {
    if (saturated_count == 0) return true;
    if (!has_real) return false;
    std::size_t next = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (saturated_mask & (1u << i)) values[i] = real[next++];
    }
    return true;
  }

  /// "compressed size, local header offset" (or "none"), for messages.
  std::string saturated_names(const char* none) const {
    std::string out;
    for (unsigned i = 0; i < 3; ++i) {
      if (saturated_mask & (1u << i))
        out += (out.empty() ? "" : ", ") + std::string(kZip64Fields[i]);
    }
    return out.empty() ? none : out;
  }
};

/// The zip64 field of the extra block [start, end): found (with its range), absent, or
/// malformed (a field runs past the block, or zip64 appears twice).
struct ExtraScan {
  bool malformed;
  bool found;
  std::size_t at;
  std::size_t length;
};

inline ExtraScan zip64_payload(const std::uint8_t* buf, std::size_t start, std::size_t end) {
  ExtraScan out{false, false, 0, 0};
  std::size_t pos = start;
  while (pos + 4 <= end) {
    const std::uint16_t tag = le16(buf + pos);
    const std::uint16_t length = le16(buf + pos + 2);
    const std::size_t at = pos + 4;
    pos = at + length;
    if (pos > end) return ExtraScan{true, false, 0, 0};
    if (tag == kZip64ExtraId) {
      if (out.found) return ExtraScan{true, false, 0, 0};
      out = ExtraScan{false, true, at, length};
    }
  }
  if (pos != end) return ExtraScan{true, false, 0, 0};
  return out;
}

/// The id of the first Info-ZIP Unicode Path or Comment field of the extra block, or 0.
inline std::uint16_t unicode_extra(const std::uint8_t* buf, std::size_t start, std::size_t end) {
  std::size_t pos = start;
  while (pos + 4 <= end) {
    const std::uint16_t tag = le16(buf + pos);
    if (tag == 0x7075 || tag == 0x6375) return tag;
    pos += 4 + std::size_t{le16(buf + pos + 2)};
  }
  return 0;
}

/// Read the zip64 field of the extra block [start, end) for `values` (a prefix of
/// kZip64Fields, as the header's 32-bit fields hold them).
inline Zip64 resolve_zip64(const std::uint8_t* buf, std::size_t start, std::size_t end,
                           const std::uint64_t* values, std::size_t count) {
  Zip64 z;
  for (std::size_t i = 0; i < count; ++i) {
    if (values[i] == kU32Max) {
      z.saturated_mask |= 1u << i;
      ++z.saturated_count;
    }
  }
  if (z.saturated_count == 0 && start == end) return z;
  const ExtraScan scan = zip64_payload(buf, start, end);
  if (scan.malformed) {
    z.malformed = true;
    return z;
  }
  if (!scan.found) return z;
  z.payload = scan.length;
  if (scan.length < 8 * std::size_t{z.saturated_count}) return z;
  z.has_real = true;
  for (unsigned k = 0; k < z.saturated_count; ++k) z.real[k] = le64(buf + scan.at + 8 * k);
  return z;
}

}  // namespace detail
}  // namespace zip
}  // namespace ptn
