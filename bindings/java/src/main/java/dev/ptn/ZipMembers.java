package dev.ptn;

import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Stages 4 and 5 of the zip read (ptn/zip/local.py, layout.py) and its result: the members
 * whose data range is sound, in directory order, and every finding. Throws PtnException only
 * when no directory can be read at all.
 */
final class ZipMembers {
  static final int ALIGNMENT = 64;
  private static final long SIG_DD = 0x08074b50L;

  /** One readable member (ptn.zip.Member). */
  static final class Member {
    String name;
    long headerOffset;
    long dataOffset;
    long size; // bytes stored
    long crc32;
    int method;
    long contentSize;
    String fault; // zip-member-compressed / zip-member-encrypted (already reported), or null
    boolean descriptor;
  }

  private static final class Local {
    int flags;
    int method;
    long crc32;
    BigInteger usize;
    BigInteger csize;
    byte[] rawName;
    long dataOffset;
    ZipDirectory.Zip64 zip64;
    int unicode;
    String problem; // "outside", "no-signature", "overruns", or null
  }

  private static final class Placed {
    ZipDirectory.Entry entry;
    long start;
    long dataOffset;
    long end;
  }

  final List<Member> members = new ArrayList<>();
  List<Finding> findings;

  static ZipMembers read(PackageSource r) throws IOException {
    ZipSink sink = new ZipSink();
    ZipEnds ends = ZipEnds.locate(r, sink);
    ZipDirectory directory = ZipDirectory.read(r, ends, sink);
    List<Placed> placed = new ArrayList<>();
    Map<String, Integer> first = new HashMap<>();
    Map<BigInteger, Local> headers = new HashMap<>();
    for (ZipDirectory.Entry e : directory.entries) {
      Placed p = checkLocal(r, e, ends.cdStart, sink, headers);
      if (p != null) placed.add(p);
      if (e.name == null) continue;
      Integer seen = first.get(e.name);
      if (seen != null) {
        sink.add(
            "zip-duplicate-member",
            e.name,
            "member " + e.label + " appears again as central directory entry " + e.number
                + " (first as entry " + seen + "); readers disagree on which one they return, so"
                + " names must be unique");
      } else {
        first.put(e.name, e.number);
      }
    }
    boolean complete = directory.complete && placed.size() == directory.entries.size();
    layout(placed, complete, ends, sink);
    ZipMembers out = new ZipMembers();
    for (Placed p : placed) {
      ZipDirectory.Entry e = p.entry;
      if (e.name == null) continue;
      if (p.dataOffset % ALIGNMENT != 0) {
        sink.add(
            "zip-unaligned-member",
            e.name,
            "the data of member " + e.label + " starts at offset " + p.dataOffset + ", "
                + (p.dataOffset % ALIGNMENT) + " past a multiple of " + ALIGNMENT
                + "; aligned data can be viewed without copying by every consumer (`ptn repack`"
                + " aligns it, keeping every byte of content)",
            "advice");
      }
      Member m = new Member();
      m.name = e.name;
      m.headerOffset = p.start;
      m.dataOffset = p.dataOffset;
      m.size = e.csize.longValueExact();
      m.crc32 = e.crc32;
      m.method = e.method;
      m.contentSize = e.method == 0 ? m.size : e.usize.min(ZipSink.big(Long.MAX_VALUE)).longValue();
      if ((e.flags & ZipDirectory.FLAGS_ENCRYPTION) != 0) {
        m.fault = "zip-member-encrypted";
      } else if (e.method != 0 || (e.flags & ZipDirectory.FLAG_PATCHED) != 0) {
        m.fault = "zip-member-compressed";
      }
      m.descriptor = (e.flags & ZipDirectory.FLAG_DESCRIPTOR) != 0;
      out.members.add(m);
    }
    out.findings = sink.finish();
    return out;
  }

  private static Local readLocal(PackageSource r, BigInteger at, long areaEnd) throws IOException {
    Local local = new Local();
    if (at.add(ZipSink.big(30)).compareTo(ZipSink.big(areaEnd)) > 0) {
      local.problem = "outside";
      return local;
    }
    long offset = at.longValueExact();
    byte[] h = r.read(offset, 30);
    if (ZipSink.u32(h, 0) != ZipEnds.SIG_LFH) {
      local.problem = "no-signature";
      return local;
    }
    local.flags = ZipSink.u16(h, 6);
    local.method = ZipSink.u16(h, 8);
    local.crc32 = ZipSink.u32(h, 14);
    local.csize = ZipSink.big(ZipSink.u32(h, 18));
    local.usize = ZipSink.big(ZipSink.u32(h, 22));
    int nameLen = ZipSink.u16(h, 26);
    int extraLen = ZipSink.u16(h, 28);
    long data = offset + 30 + nameLen + extraLen;
    if (data > areaEnd) {
      local.problem = "overruns";
      return local;
    }
    byte[] tail = r.read(offset + 30, nameLen + extraLen);
    long[] stored = {ZipSink.u32(h, 22), ZipSink.u32(h, 18)};
    ZipDirectory.Zip64 z = ZipDirectory.resolveZip64(tail, nameLen, nameLen + extraLen, stored);
    if (!z.saturated.isEmpty()) {
      BigInteger[] resolved = ZipDirectory.resolveValues(z, stored);
      if (resolved != null) {
        local.usize = resolved[0];
        local.csize = resolved[1];
      }
    }
    local.unicode = extraLen != 0 ? ZipDirectory.unicodeExtra(tail, nameLen, nameLen + extraLen) : -1;
    local.rawName = Arrays.copyOf(tail, nameLen);
    local.dataOffset = data;
    local.zip64 = z;
    return local;
  }

  private static Placed checkLocal(
      PackageSource r,
      ZipDirectory.Entry e,
      long areaEnd,
      ZipSink sink,
      Map<BigInteger, Local> headers)
      throws IOException {
    String member = e.name;
    String label = e.label;
    BigInteger h = e.headerOffset;
    Local local = headers.get(h);
    if (local == null) {
      local = readLocal(r, h, areaEnd);
      headers.put(h, local);
    }
    if (local.problem != null) {
      unusable(local.problem, e, areaEnd, sink);
      return null;
    }
    List<String> mismatches = new ArrayList<>();
    if (!Arrays.equals(local.rawName, e.rawName)) {
      mismatches.add("name '" + ZipSink.backslashReplace(local.rawName) + "'");
    }
    if (((local.flags ^ e.flags) & ZipDirectory.FLAGS_COMPARED) != 0) {
      mismatches.add(
          "flags 0x" + ZipSink.hex(local.flags, 4) + " (central 0x" + ZipSink.hex(e.flags, 4) + ")");
    }
    if (local.method != e.method) {
      mismatches.add("method " + local.method + " (central " + e.method + ")");
    }
    ZipDirectory.Zip64 z = local.zip64;
    if (z.malformed) {
      sink.add(
          "zip-bad-zip64",
          member,
          "the local extra fields of member " + label
              + " are malformed (a field runs past the block, or zip64 appears twice)");
    } else if (!z.saturated.isEmpty() && z.real == null) {
      sink.add(
          "zip-bad-zip64",
          member,
          "the local header of member " + label + " has 32-bit sizes 0xFFFFFFFF but no zip64"
              + " extra field large enough to give the real sizes");
    } else if (z.payload != null && z.payload != 8 * z.saturated.size()) {
      sink.add(
          "zip-bad-zip64",
          member,
          "the local zip64 extra field of member " + label + " is " + z.payload
              + " bytes; its saturated sizes ("
              + (z.saturated.isEmpty() ? "none" : String.join(", ", z.saturated))
              + ") need exactly " + (8 * z.saturated.size()));
    }
    int localOnly = local.flags & ~e.flags & ~ZipDirectory.FLAGS_COMPARED;
    if (localOnly != 0) ZipDirectory.reportFlags(member, label, "local", localOnly, sink);
    if (local.unicode >= 0) {
      ZipDirectory.reportUnicodeExtra(member, label, "local", local.unicode, sink);
    }
    boolean descriptor =
        (e.flags & ZipDirectory.FLAG_DESCRIPTOR) != 0
            && (local.flags & ZipDirectory.FLAG_DESCRIPTOR) != 0;
    if (local.crc32 != e.crc32 && !(descriptor && local.crc32 == 0)) {
      mismatches.add("CRC-32 " + local.crc32 + " (central " + e.crc32 + ")");
    }
    if (!local.csize.equals(e.csize) && !(descriptor && local.csize.signum() == 0)) {
      mismatches.add("compressed size " + local.csize + " (central " + e.csize + ")");
    }
    if (!local.usize.equals(e.usize) && !(descriptor && local.usize.signum() == 0)) {
      mismatches.add("uncompressed size " + local.usize + " (central " + e.usize + ")");
    }
    if (!mismatches.isEmpty()) {
      sink.add(
          "zip-header-mismatch",
          member,
          "the local header of member " + label + " at offset " + h
              + " disagrees with the central directory: " + String.join("; ", mismatches));
    }
    long data = local.dataOffset;
    BigInteger dataEnd = ZipSink.big(data).add(e.csize);
    if (dataEnd.compareTo(ZipSink.big(areaEnd)) > 0) {
      sink.add(
          "zip-member-out-of-bounds",
          member,
          "member " + label + ": data [" + data + ", " + dataEnd
              + ") runs past the start of the central directory at offset " + areaEnd);
      return null;
    }
    long end = dataEnd.longValueExact();
    if (descriptor) end = descriptorEnd(r, e, end, areaEnd, sink);
    Placed p = new Placed();
    p.entry = e;
    p.start = h.longValueExact();
    p.dataOffset = data;
    p.end = end;
    return p;
  }

  private static void unusable(String problem, ZipDirectory.Entry e, long areaEnd, ZipSink sink) {
    if (problem.equals("outside")) {
      sink.add(
          "zip-member-out-of-bounds",
          e.name,
          "member " + e.label + ": local header offset " + e.headerOffset
              + " is not inside the member area [0, " + areaEnd + ") before the central directory");
    } else if (problem.equals("no-signature")) {
      sink.add(
          "zip-header-mismatch",
          e.name,
          "member " + e.label + ": the central directory points at offset " + e.headerOffset
              + ", where there is no local header");
    } else {
      sink.add(
          "zip-member-out-of-bounds",
          e.name,
          "member " + e.label + ": the local header at offset " + e.headerOffset
              + " (with name and extra fields) runs into the central directory at offset "
              + areaEnd);
    }
  }

  private static long descriptorEnd(
      PackageSource r, ZipDirectory.Entry e, long dataEnd, long areaEnd, ZipSink sink)
      throws IOException {
    for (int size : new int[] {16, 24, 12, 20}) {
      boolean withSig = size == 16 || size == 24;
      if (dataEnd + size > areaEnd) continue;
      long at = dataEnd + (withSig ? 4 : 0);
      if (withSig && !ZipEnds.sigAt(r, dataEnd, SIG_DD)) continue;
      byte[] b = r.read(at, size - (withSig ? 4 : 0));
      boolean wide = size == 20 || size == 24;
      BigInteger c = wide ? ZipSink.u64(b, 4) : ZipSink.big(ZipSink.u32(b, 4));
      BigInteger u = wide ? ZipSink.u64(b, 12) : ZipSink.big(ZipSink.u32(b, 8));
      if (ZipSink.u32(b, 0) == e.crc32 && c.equals(e.csize) && u.equals(e.usize)) {
        return dataEnd + size;
      }
    }
    sink.add(
        "zip-header-mismatch",
        e.name,
        "member " + e.label + " announces a data descriptor (flag bit 3) but none after its data"
            + " at offset " + dataEnd + " repeats the central CRC-32 " + ZipSink.hex(e.crc32, 8)
            + " and size " + e.csize);
    return dataEnd;
  }

  private static void layout(List<Placed> placed, boolean complete, ZipEnds ends, ZipSink sink) {
    List<Placed> spans = new ArrayList<>(placed);
    spans.sort(
        (a, b) -> a.start != b.start ? Long.compare(a.start, b.start) : Long.compare(a.end, b.end));
    long cursor = ends.shift;
    Placed owner = null;
    for (Placed p : spans) {
      ZipDirectory.Entry e = p.entry;
      if (owner != null && p.start < cursor) {
        sink.add(
            "zip-overlapping-entries",
            e.name,
            "member " + e.label + " [" + p.start + ", " + p.end + ") overlaps member "
                + owner.entry.label + " [" + owner.start + ", " + owner.end
                + "); every member owns its bytes");
      } else if (p.start > cursor && complete) {
        gap(cursor, p.start, owner, "the local header of member " + e.label, ends.shift, sink);
      }
      if (p.end > cursor) {
        cursor = p.end;
        owner = p;
      }
    }
    if (cursor < ends.cdStart && complete) {
      gap(cursor, ends.cdStart, owner, "the central directory", ends.shift, sink);
    }
  }

  private static void gap(long begin, long end, Placed owner, String what, long shift, ZipSink sink) {
    if (owner == null && shift == 0) {
      sink.add(
          "zip-data-before-archive",
          null,
          end + " bytes precede " + what + " at offset " + end + " and belong to no member; a .ptn"
              + " starts with its first local header at offset 0");
    } else {
      String after =
          owner != null ? "the end of member " + owner.entry.label : "the prepended bytes";
      sink.add(
          "zip-unreferenced-data",
          null,
          (end - begin) + " bytes between " + after + " (offset " + begin + ") and " + what
              + " (offset " + end + ") belong to no member; hidden bytes can carry a decoy local"
              + " header");
    }
  }
}
