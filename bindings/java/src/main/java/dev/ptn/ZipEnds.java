package dev.ptn;

import java.io.IOException;
import java.math.BigInteger;

/**
 * Stage 1 of the zip read (ptn/zip/ends.py): the end records and where the central directory
 * is. Sizes and offsets are BigInteger here (a zip64 record holds unsigned 64-bit ones) until
 * they are known to lie inside the file.
 */
final class ZipEnds {
  static final int MAX_MEMBERS = 1 << 20;
  static final long SIG_LFH = 0x04034b50L;
  static final long SIG_CDH = 0x02014b50L;
  private static final long SIG_EOCD = 0x06054b50L;
  private static final long SIG_LOC64 = 0x07064b50L;
  private static final long SIG_EOCD64 = 0x06064b50L;
  private static final int EOCD_SEARCH = 22 + 0xffff;
  private static final int U16_MAX = 0xffff;
  private static final long U32_MAX = 0xffffffffL;

  /** Where the directory is: [cdStart, cdEnd) in the file, and the prepended bytes. */
  final long counted;
  final long cdStart;
  final long cdEnd;
  final long shift;

  private ZipEnds(long counted, long cdStart, long cdEnd, long shift) {
    this.counted = counted;
    this.cdStart = cdStart;
    this.cdEnd = cdEnd;
    this.shift = shift;
  }

  static boolean sigAt(PackageSource r, long offset, long sig) throws IOException {
    if (!(offset >= 0 && offset + 4 <= r.size())) return false;
    return ZipSink.u32(r.read(offset, 4), 0) == sig;
  }

  private static PtnException notAZip(String message) {
    return new PtnException("zip-not-a-zip", message);
  }

  static ZipEnds locate(PackageSource r, ZipSink sink) throws IOException {
    long n = r.size();
    long p = findEocd(r);
    byte[] e = r.read(p, 22);
    int disk = ZipSink.u16(e, 4);
    int diskCd = ZipSink.u16(e, 6);
    int nDisk = ZipSink.u16(e, 8);
    int nTotal = ZipSink.u16(e, 10);
    BigInteger cdSize = ZipSink.big(ZipSink.u32(e, 12));
    BigInteger cdOffset = ZipSink.big(ZipSink.u32(e, 16));
    int commentLen = ZipSink.u16(e, 20);
    checkTail(n, p, commentLen, sink);
    long[] eocd = {disk, diskCd, nDisk, nTotal, ZipSink.u32(e, 12), ZipSink.u32(e, 16)};
    BigInteger[] zip64 = readZip64(r, p, eocd, sink);
    BigInteger records;
    BigInteger count;
    BigInteger zShift;
    if (zip64 == null) {
      if (disk != 0 || diskCd != 0 || nDisk != nTotal) {
        throw notAZip(
            "the end record describes an archive split over disks (disk "
                + disk
                + ", directory on disk "
                + diskCd
                + "); a .ptn is a single-file archive");
      }
      records = ZipSink.big(p);
      count = ZipSink.big(nTotal);
      zShift = BigInteger.ZERO;
    } else {
      records = zip64[0];
      count = zip64[1];
      cdSize = zip64[2];
      cdOffset = zip64[3];
      zShift = zip64[4];
      if ((disk != 0 && disk != U16_MAX) || (diskCd != 0 && diskCd != U16_MAX)) {
        throw notAZip(
            "the end record describes an archive split over disks; a .ptn is a single-file archive");
      }
    }
    if (count.compareTo(ZipSink.big(MAX_MEMBERS)) > 0) {
      throw new PtnException(
          "zip-too-many-members",
          "the end record counts " + count + " members; at most " + MAX_MEMBERS + " are allowed");
    }
    BigInteger shift = BigInteger.ZERO;
    BigInteger cdEnd = cdOffset.add(cdSize);
    if (cdEnd.equals(records)) {
      // where the end record says
    } else if (cdSize.compareTo(records) <= 0
        && cdOffset.compareTo(records.subtract(cdSize)) < 0
        && (cdSize.signum() == 0 || sigAt(r, records.subtract(cdSize).longValueExact(), SIG_CDH))) {
      shift = records.subtract(cdSize).subtract(cdOffset);
      sink.add(
          "zip-data-before-archive",
          null,
          "the central directory is "
              + shift
              + " bytes after the offset "
              + cdOffset
              + " the end record gives: "
              + shift
              + " bytes were prepended to the archive (a stub or a concatenated file); a .ptn"
              + " starts with its first local header");
    } else if (cdEnd.compareTo(records) < 0
        && (cdSize.signum() == 0 || sigAt(r, cdOffset.longValueExact(), SIG_CDH))) {
      sink.add(
          "zip-unreferenced-data",
          null,
          records.subtract(cdEnd)
              + " bytes between the end of the central directory (offset "
              + cdEnd
              + ") and the end records belong to no record");
    } else if (cdEnd.compareTo(ZipSink.big(n)) > 0) {
      throw new PtnException(
          "zip-truncated",
          "the central directory (offset "
              + cdOffset
              + ", "
              + cdSize
              + " bytes) runs past the end of the "
              + n
              + "-byte file: the file was cut short");
    } else {
      throw notAZip(
          "the central directory (offset "
              + cdOffset
              + ", "
              + cdSize
              + " bytes) does not end where the end records begin (offset "
              + records
              + "); the directory cannot be read");
    }
    if (zip64 != null && !zShift.equals(shift)) {
      sink.add(
          "zip-bad-zip64",
          null,
          "the zip64 locator's offset is off by "
              + zShift
              + " bytes but the directory offset by "
              + shift
              + "; both must point at the real records");
    }
    // Every branch that gets here keeps the directory inside [0, records]: longs are exact.
    long start = cdOffset.add(shift).longValueExact();
    return new ZipEnds(
        count.longValueExact(), start, start + cdSize.longValueExact(), shift.longValueExact());
  }

  private static long findEocd(PackageSource r) throws IOException {
    long n = r.size();
    if (n >= 22) {
      byte[] last = r.read(n - 22, 22);
      if (ZipSink.u32(last, 0) == SIG_EOCD && ZipSink.u16(last, 20) == 0) return n - 22;
    }
    long start = Math.max(0, n - EOCD_SEARCH);
    byte[] tail = r.read(start, (int) (n - start));
    long fallback = -1;
    for (int i = tail.length - 4; i >= 0; i--) {
      if (tail[i] != 0x50 || ZipSink.u32(tail, i) != SIG_EOCD) continue;
      long p = start + i;
      if (p + 22 > n) continue;
      if (p + 22 + ZipSink.u16(tail, i + 20) == n) return p;
      if (fallback < 0) fallback = p;
    }
    if (fallback >= 0) return fallback;
    if (sigAt(r, 0, SIG_LFH)) {
      throw new PtnException(
          "zip-truncated",
          "the "
              + n
              + "-byte file starts like a zip archive but has no end-of-central-directory record:"
              + " it was cut short; copy or download it again");
    }
    if (n >= 8 && new String(r.read(4, 4), java.nio.charset.StandardCharsets.ISO_8859_1).equals("ET12")) {
      // An ExecuTorch .pte (a FlatBuffer, identifier ET12): the usual wrong file to hand in.
      throw notAZip(
          "this is an ExecuTorch program (a .pte file: identifier ET12 at bytes 4..8), not a .ptn"
              + " package, which is a zip archive holding program.ptg; write a .ptn from the export"
              + " with ptn.executorch.save(programs, 'model.ptn')");
    }
    throw notAZip(
        "no end-of-central-directory record in the last "
            + Math.min(n, EOCD_SEARCH)
            + " bytes: this file is not a zip archive, and a .ptn is one");
  }

  private static void checkTail(long n, long p, int commentLen, ZipSink sink) {
    long after = n - (p + 22);
    if (commentLen > after) {
      sink.add(
          "zip-truncated",
          null,
          "the end record declares a "
              + commentLen
              + "-byte comment but only "
              + after
              + " bytes follow it: the file was cut short");
    } else if (commentLen != 0 && commentLen == after) {
      sink.add(
          "zip-trailing-data",
          null,
          "the end record carries a "
              + commentLen
              + "-byte archive comment; a .ptn ends with its end record and has an empty comment");
    } else if (after != 0) {
      sink.add(
          "zip-trailing-data",
          null,
          after
              + " bytes follow the end-of-central-directory record at offset "
              + p
              + "; nothing may follow it (was something appended to the file?)");
    }
  }

  /** [records, count, cdSize, cdOffset, zShift], or null without a usable zip64 record. */
  private static BigInteger[] readZip64(PackageSource r, long p, long[] eocd, ZipSink sink)
      throws IOException {
    long loc = p - 20;
    if (!sigAt(r, loc, SIG_LOC64)) return null;
    byte[] l = r.read(loc, 20);
    long zDisk = ZipSink.u32(l, 4);
    BigInteger zOff = ZipSink.u64(l, 8);
    long disks = ZipSink.u32(l, 16);
    if (zDisk != 0 || disks > 1) {
      throw notAZip(
          "the zip64 locator describes an archive split over "
              + disks
              + " disks; a .ptn is a single-file archive");
    }
    boolean saturated = eocd[3] == U16_MAX || eocd[4] == U32_MAX || eocd[5] == U32_MAX;
    long rec = -1;
    if (zOff.add(ZipSink.big(56)).compareTo(ZipSink.big(loc)) <= 0
        && sigAt(r, zOff.longValueExact(), SIG_EOCD64)) {
      rec = zOff.longValueExact();
    } else if (loc >= 56 && sigAt(r, loc - 56, SIG_EOCD64)) {
      rec = loc - 56;
    }
    if (rec < 0) {
      String message =
          "a zip64 locator precedes the end record but no zip64 end record is at offset "
              + zOff
              + " (or just before the locator)";
      if (saturated) {
        throw new PtnException("zip-bad-zip64", message + "; the directory cannot be located");
      }
      sink.add("zip-bad-zip64", null, message + "; using the 32-bit end record");
      return null;
    }
    byte[] z = r.read(rec, 56);
    BigInteger rest = ZipSink.u64(z, 4);
    long disk = ZipSink.u32(z, 16);
    long diskCd = ZipSink.u32(z, 20);
    BigInteger nDisk = ZipSink.u64(z, 24);
    BigInteger nTotal = ZipSink.u64(z, 32);
    BigInteger cdSize = ZipSink.u64(z, 40);
    BigInteger cdOffset = ZipSink.u64(z, 48);
    BigInteger fields = ZipSink.big(44);
    if (rest.compareTo(fields) < 0 || !ZipSink.big(rec + 12).add(rest).equals(ZipSink.big(loc))) {
      sink.add(
          "zip-bad-zip64",
          null,
          "the zip64 end record at offset "
              + rec
              + " declares "
              + rest
              + " more bytes, but "
              + (loc - rec - 12)
              + " lie between its size field and the locator");
    } else if (!rest.equals(fields)) {
      sink.add(
          "zip-bad-zip64",
          null,
          "the zip64 end record at offset "
              + rec
              + " carries "
              + rest.subtract(fields)
              + " bytes of extensible data after its 44 bytes of fields; a .ptn has none");
    }
    if (disk != 0 || diskCd != 0 || !nDisk.equals(nTotal)) {
      throw notAZip(
          "the zip64 end record describes an archive split over several disks; a .ptn is a"
              + " single-file archive");
    }
    String[] what = {"entry count", "directory size", "directory offset"};
    long[] sat = {U16_MAX, U32_MAX, U32_MAX};
    BigInteger[] full = {nTotal, cdSize, cdOffset};
    for (int k = 0; k < 3; k++) {
      long shortValue = eocd[3 + k];
      if (shortValue != sat[k] && !ZipSink.big(shortValue).equals(full[k])) {
        sink.add(
            "zip-bad-zip64",
            null,
            "the end record gives "
                + what[k]
                + " "
                + shortValue
                + " but the zip64 end record gives "
                + full[k]
                + "; the 32-bit field must equal it or be 0x"
                + Long.toHexString(sat[k]).toUpperCase(java.util.Locale.ROOT));
      }
    }
    BigInteger records = ZipSink.big(rec);
    return new BigInteger[] {records, nTotal, cdSize, cdOffset, records.subtract(zOff)};
  }
}
