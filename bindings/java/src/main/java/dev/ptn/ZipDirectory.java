package dev.ptn;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Stage 2 of the zip read (ptn/zip/central.py): the central directory, and zip64 extras. */
final class ZipDirectory {
  static final int FLAG_ENCRYPTED = 0x0001;
  static final int FLAG_DESCRIPTOR = 0x0008;
  static final int FLAG_PATCHED = 0x0020;
  static final int FLAG_STRONG_ENCRYPTION = 0x0040;
  static final int FLAG_UTF8 = 0x0800;
  static final int FLAG_MASKED_HEADERS = 0x2000;
  static final int FLAGS_WITH_A_RULE =
      FLAG_ENCRYPTED
          | FLAG_DESCRIPTOR
          | FLAG_PATCHED
          | FLAG_STRONG_ENCRYPTION
          | FLAG_UTF8
          | FLAG_MASKED_HEADERS;
  static final int FLAGS_ENCRYPTION = FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS;
  static final int FLAGS_COMPARED =
      FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_STRONG_ENCRYPTION | FLAG_UTF8;
  private static final int VERSION_ZIP64 = 45;
  private static final long U32_MAX = 0xffffffffL;
  private static final int U16_MAX = 0xffff;
  private static final int ZIP64_EXTRA_ID = 0x0001;
  private static final String[] ZIP64_FIELDS = {
    "uncompressed size", "compressed size", "local header offset"
  };
  private static final int PIECE = 8 << 10;
  private static final int PIECE_MAX = 1 << 20;

  /** One central directory entry. */
  static final class Entry {
    int number;
    String name; // null: not UTF-8
    String label;
    byte[] rawName;
    int flags;
    int method;
    long crc32;
    BigInteger csize;
    BigInteger usize;
    BigInteger headerOffset; // the shift applied; may lie far outside the file
  }

  /** What a zip64 extra block resolved to. */
  static final class Zip64 {
    boolean malformed;
    List<String> saturated = new ArrayList<>();
    Integer payload;
    BigInteger[] real = new BigInteger[0]; // null: saturated values with no real ones
  }

  final List<Entry> entries = new ArrayList<>();
  boolean complete = true;

  /** A window on the directory, read in doubling pieces as the walk reaches them. */
  private static final class Window {
    final PackageSource r;
    final long start;
    final long size;
    byte[] bytes = new byte[0];
    long base;
    int piece = PIECE;

    Window(PackageSource r, long start, long size) {
      this.r = r;
      this.start = start;
      this.size = size;
    }

    int get(long at, int length) throws IOException {
      if (at < base || at + length > base + bytes.length) {
        int n = (int) Math.min(size - at, Math.max(length, piece));
        bytes = r.read(start + at, n);
        base = at;
        piece = Math.min(2 * piece, PIECE_MAX);
      }
      return (int) (at - base);
    }
  }

  static ZipDirectory read(PackageSource r, ZipEnds ends, ZipSink sink) throws IOException {
    ZipDirectory out = new ZipDirectory();
    long end = ends.cdEnd - ends.cdStart;
    Window window = new Window(r, ends.cdStart, end);
    long pos = 0;
    for (int i = 0; i < ends.counted; i++) {
      if (pos + 46 > end) {
        sink.add(
            "zip-not-a-zip",
            null,
            "the central directory ends after " + i + " of the " + ends.counted
                + " entries the end record counts");
        out.complete = false;
        return out;
      }
      int at = window.get(pos, 46);
      byte[] b = window.bytes;
      if (ZipSink.u32(b, at) != ZipEnds.SIG_CDH) {
        sink.add(
            "zip-not-a-zip",
            null,
            "central directory entry " + i + " at offset " + (ends.cdStart + pos)
                + " does not start with a central-header signature; the directory is corrupt");
        out.complete = false;
        return out;
      }
      int nameLen = ZipSink.u16(b, at + 28);
      int extraLen = ZipSink.u16(b, at + 30);
      int commentLen = ZipSink.u16(b, at + 32);
      long nextPos = pos + 46 + nameLen + extraLen + commentLen;
      if (nextPos > end) {
        sink.add(
            "zip-not-a-zip",
            null,
            "central directory entry " + i + " at offset " + (ends.cdStart + pos)
                + " runs past the end of the directory (offset " + ends.cdEnd + ")");
        out.complete = false;
        return out;
      }
      at = window.get(pos, 46 + nameLen + extraLen);
      Entry entry =
          entry(i, window.bytes, at, at + 46 + nameLen, at + 46 + nameLen + extraLen, ends.shift, sink);
      if (entry == null) {
        out.complete = false;
      } else {
        out.entries.add(entry);
      }
      pos = nextPos;
    }
    if (pos != end) {
      sink.add(
          "zip-not-a-zip",
          null,
          (end - pos) + " bytes follow the " + ends.counted
              + " entries the end record counts in the central directory: the count is wrong or"
              + " entries are hidden");
    }
    return out;
  }

  private static Entry entry(
      int i, byte[] cd, int pos, int extraAt, int extraEnd, long shift, ZipSink sink) {
    int needed = ZipSink.u16(cd, pos + 6);
    int flags = ZipSink.u16(cd, pos + 8);
    int method = ZipSink.u16(cd, pos + 10);
    long crc = ZipSink.u32(cd, pos + 16);
    BigInteger csize = ZipSink.big(ZipSink.u32(cd, pos + 20));
    BigInteger usize = ZipSink.big(ZipSink.u32(cd, pos + 24));
    int disk = ZipSink.u16(cd, pos + 34);
    BigInteger offset = ZipSink.big(ZipSink.u32(cd, pos + 42));
    byte[] raw = Arrays.copyOfRange(cd, pos + 46, extraAt);
    String name = decode(raw);
    String label;
    if (name == null) {
      label = "entry " + i + " '" + ZipSink.backslashReplace(raw) + "'";
      sink.add(
          "zip-bad-member-name", null, "the name of " + label + " is not valid UTF-8; member names are UTF-8");
    } else {
      label = "'" + name + "'";
      if (name.indexOf('\0') >= 0 || name.isEmpty()) {
        sink.add(
            "zip-bad-member-name",
            name,
            "central directory entry " + i + " has "
                + (name.isEmpty() ? "an empty name" : "a name containing a NUL character")
                + "; member names are non-empty and NUL-free");
      }
    }
    checkFields(name, label, needed, flags, method, sink);
    if (disk != 0) {
      sink.add(
          "zip-not-a-zip",
          name,
          "member " + label + " starts on disk " + disk
              + "; a .ptn is a single-file archive, so every disk number is 0");
    }
    if (extraAt != extraEnd) {
      int tag = unicodeExtra(cd, extraAt, extraEnd);
      if (tag >= 0) reportUnicodeExtra(name, label, "central", tag, sink);
    }
    long[] stored = {ZipSink.u32(cd, pos + 24), ZipSink.u32(cd, pos + 20), ZipSink.u32(cd, pos + 42)};
    Zip64 z = resolveZip64(cd, extraAt, extraEnd, stored);
    if (z.malformed) {
      sink.add(
          "zip-bad-zip64",
          name,
          "the central extra fields of member " + label
              + " are malformed (a field runs past the block, or zip64 appears twice), so zip64"
              + " values cannot be found");
      if (!z.saturated.isEmpty()) return null;
    } else if (!z.saturated.isEmpty() || z.payload != null) {
      int need = 8 * z.saturated.size() + (disk == U16_MAX ? 4 : 0);
      if (z.payload == null) {
        sink.add(
            "zip-bad-zip64",
            name,
            "member " + label + " has " + String.join(", ", z.saturated)
                + " 0xFFFFFFFF but no zip64 extra field giving the real value");
      } else {
        if (z.payload != need) {
          sink.add(
              "zip-bad-zip64",
              name,
              "the zip64 extra field of member " + label + " is " + z.payload
                  + " bytes; its saturated fields ("
                  + (z.saturated.isEmpty() ? "none" : String.join(", ", z.saturated))
                  + ") need exactly " + need);
        }
        BigInteger[] resolved = resolveValues(z, stored);
        if (resolved == null) return null;
        usize = resolved[0];
        csize = resolved[1];
        offset = resolved[2];
      }
    }
    if (method == 0 && !csize.equals(usize)) {
      sink.add(
          "zip-size-mismatch",
          name,
          "stored member " + label + " has compressed size " + csize + " but uncompressed size "
              + usize + "; for a STORED member both are the data length");
    }
    Entry e = new Entry();
    e.number = i;
    e.name = name;
    e.label = label;
    e.rawName = raw;
    e.flags = flags;
    e.method = method;
    e.crc32 = crc;
    e.csize = csize;
    e.usize = usize;
    e.headerOffset = offset.add(ZipSink.big(shift));
    return e;
  }

  /** Strict UTF-8, or null. */
  static String decode(byte[] raw) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(raw))
          .toString();
    } catch (CharacterCodingException err) {
      return null;
    }
  }

  private static String methodName(int method) {
    switch (method) {
      case 8:
        return "deflate";
      case 9:
        return "deflate64";
      case 12:
        return "bzip2";
      case 14:
        return "lzma";
      case 93:
        return "zstd";
      case 95:
        return "xz";
      case 99:
        return "AES";
      default:
        return null;
    }
  }

  private static void checkFields(
      String name, String label, int needed, int flags, int method, ZipSink sink) {
    if ((flags & FLAGS_ENCRYPTION) != 0) {
      sink.add(
          "zip-member-encrypted",
          name,
          "member " + label + " is encrypted (flags 0x" + ZipSink.hex(flags, 4)
              + "); .ptn members are stored in clear");
    }
    if ((needed & 0xff) > VERSION_ZIP64) {
      sink.add(
          "zip-unsupported-version",
          name,
          "member " + label + " needs zip version " + ((needed & 0xff) / 10) + "." + ((needed & 0xff) % 10)
              + " to extract; stored members with zip64 need at most 4.5, and readers refuse"
              + " higher versions (Python's zipfile above 6.3)");
    }
    if (method != 0) {
      String known = methodName(method);
      sink.add(
          "zip-member-compressed",
          name,
          "member " + label + " uses compression method "
              + (known != null ? method + " (" + known + ")" : String.valueOf(method))
              + "; .ptn members are STORED (method 0) so they can be mapped without copying"
              + " (`ptn repack` stores a deflated package's members)");
    } else if ((flags & FLAG_PATCHED) != 0) {
      sink.add(
          "zip-member-compressed",
          name,
          "member " + label
              + " sets flag bit 5 (compressed patched data); .ptn members are plain STORED data");
    }
    if ((flags & FLAG_DESCRIPTOR) != 0) {
      sink.add(
          "zip-data-descriptor",
          name,
          "member " + label
              + " sets flag bit 3 (a data descriptor follows the data); .ptn writers know every"
              + " size before the data, and a descriptor lets a reader walking local headers find"
              + " the data's end elsewhere than the directory says");
    }
    if ((flags & ~FLAGS_WITH_A_RULE) != 0) {
      reportFlags(name, label, "central", flags & ~FLAGS_WITH_A_RULE, sink);
    }
  }

  static void reportUnicodeExtra(String name, String label, String where, int tag, ZipSink sink) {
    sink.add(
        "zip-unicode-path-extra",
        name,
        "the " + where + " header of member " + label + " carries an Info-ZIP Unicode "
            + (tag == 0x7075 ? "Path" : "Comment") + " extra field (0x" + ZipSink.hex(tag, 4)
            + "); readers that honour it see another name than those that do not, so .ptn"
            + " headers carry none");
  }

  static void reportFlags(String name, String label, String where, int bits, ZipSink sink) {
    sink.add(
        "zip-bad-flags",
        name,
        "the " + where + " header of member " + label + " sets general-purpose flag bits 0x"
            + ZipSink.hex(bits, 4) + "; a .ptn member may set only bit 11 (UTF-8 name)");
  }

  // ---- zip64 extra fields (ptn/zip/zip64.py) ----

  /** The zip64 payload range [start, end) in b, NONE when absent, or null when malformed. */
  private static final int[] NONE = new int[0];

  private static int[] zip64Payload(byte[] b, int start, int end) {
    int[] found = NONE;
    int pos = start;
    while (pos + 4 <= end) {
      int tag = ZipSink.u16(b, pos);
      int length = ZipSink.u16(b, pos + 2);
      int at = pos + 4;
      pos = pos + 4 + length;
      if (pos > end) return null;
      if (tag == ZIP64_EXTRA_ID) {
        if (found != NONE) return null;
        found = new int[] {at, pos};
      }
    }
    return pos == end ? found : null;
  }

  static int unicodeExtra(byte[] b, int start, int end) {
    int pos = start;
    while (pos + 4 <= end) {
      int tag = ZipSink.u16(b, pos);
      if (tag == 0x7075 || tag == 0x6375) return tag;
      pos += 4 + ZipSink.u16(b, pos + 2);
    }
    return -1;
  }

  static Zip64 resolveZip64(byte[] b, int start, int end, long[] values) {
    Zip64 z = new Zip64();
    boolean anySaturated = false;
    for (long v : values) anySaturated |= v == U32_MAX;
    if (anySaturated) {
      for (int k = 0; k < values.length; k++) {
        if (values[k] == U32_MAX) z.saturated.add(ZIP64_FIELDS[k]);
      }
    } else if (start == end) {
      return z;
    }
    int[] range = zip64Payload(b, start, end);
    if (range == null) {
      z.malformed = true;
      z.real = null;
      return z;
    }
    if (range == NONE && z.saturated.isEmpty()) return new Zip64();
    z.payload = range == NONE ? null : range[1] - range[0];
    if (range == NONE || range[1] - range[0] < 8 * z.saturated.size()) {
      z.real = null;
      return z;
    }
    z.real = new BigInteger[z.saturated.size()];
    for (int k = 0; k < z.real.length; k++) z.real[k] = ZipSink.u64(b, range[0] + 8 * k);
    return z;
  }

  /** The values with the saturated ones replaced; null when a real value is missing. */
  static BigInteger[] resolveValues(Zip64 z, long[] values) {
    if (!z.saturated.isEmpty() && z.real == null) return null;
    BigInteger[] out = new BigInteger[values.length];
    int i = 0;
    for (int k = 0; k < values.length; k++) {
      if (values[k] == U32_MAX && z.real != null && i < z.real.length) {
        out[k] = z.real[i++];
      } else {
        out[k] = ZipSink.big(values[k]);
      }
    }
    return out;
  }
}
