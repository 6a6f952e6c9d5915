package dev.ptn;

import java.math.BigInteger;

/**
 * A data descriptor hidden in a stored member's data (ptn.zip.decoy): the signature, then a
 * CRC-32 and two sizes (4 or 8 bytes each) equal to the data bytes before it. A reader that
 * streams the archive ends the member there. Fed the data in order, in pieces of any size;
 * {@link #found} is the first such offset, or -1.
 */
final class DecoyScan {
  private byte[] carry = new byte[0];
  private long base;
  long found = -1;

  void feed(byte[] piece, boolean last) {
    if (found >= 0) return;
    byte[] data = new byte[carry.length + piece.length];
    System.arraycopy(carry, 0, data, 0, carry.length);
    System.arraycopy(piece, 0, data, carry.length, piece.length);
    int at = indexOfSig(data, 0);
    while (at >= 0) {
      long k = base + at;
      if (at + 16 <= data.length
          && ZipSink.u32(data, at + 8) == k
          && ZipSink.u32(data, at + 12) == k) {
        found = k;
        return;
      }
      if (at + 24 > data.length && !last) break; // its 64-bit form needs the next piece
      if (at + 24 <= data.length
          && ZipSink.u64(data, at + 8).equals(BigInteger.valueOf(k))
          && ZipSink.u64(data, at + 16).equals(BigInteger.valueOf(k))) {
        found = k;
        return;
      }
      at = indexOfSig(data, at + 1);
    }
    int keep = at < 0 ? Math.min(data.length, 23) : data.length - at;
    base += data.length - keep;
    byte[] rest = new byte[keep];
    System.arraycopy(data, data.length - keep, rest, 0, keep);
    carry = rest;
  }

  void finish() {
    feed(new byte[0], true);
  }

  private static int indexOfSig(byte[] data, int from) {
    for (int i = from; i + 4 <= data.length; i++) {
      if (data[i] == 0x50 && data[i + 1] == 0x4b && data[i + 2] == 0x07 && data[i + 3] == 0x08) {
        return i;
      }
    }
    return -1;
  }
}
