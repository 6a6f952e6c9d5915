package dev.ptn;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * The bytes of a package: a {@link ByteBuffer} (heap, direct or mapped) or a {@link
 * FileChannel} mapped read-only. Reads copy only what a stage asks for; the fast check never
 * reads the constants' bytes.
 */
public abstract class PackageSource {
  /** The package's length in bytes. */
  public abstract long size();

  /** Exactly {@code length} bytes at {@code offset}, which the caller keeps inside the file. */
  abstract byte[] read(long offset, int length) throws IOException;

  /** The bytes of {@code buffer} from its position to its limit (the buffer is not moved). */
  public static PackageSource of(ByteBuffer buffer) {
    return new Mapped(new ByteBuffer[] {buffer.slice()}, buffer.remaining());
  }

  /**
   * The whole file behind {@code channel}, memory-mapped read-only in pieces of at most 1 GiB
   * (a mapping is what a runtime wants: no copy, pages read on demand). A file that another
   * program truncates while it is read makes a read fail: that is a ptn-io-error finding.
   */
  public static PackageSource map(FileChannel channel) throws IOException {
    long size = channel.size();
    List<ByteBuffer> pieces = new ArrayList<>();
    for (long at = 0; at < size; at += Mapped.PIECE) {
      pieces.add(channel.map(FileChannel.MapMode.READ_ONLY, at, Math.min(Mapped.PIECE, size - at)));
    }
    return new Mapped(pieces.toArray(new ByteBuffer[0]), size);
  }

  private static final class Mapped extends PackageSource {
    static final long PIECE = 1L << 30;
    private final ByteBuffer[] pieces;
    private final long size;

    Mapped(ByteBuffer[] pieces, long size) {
      this.pieces = pieces;
      this.size = size;
    }

    @Override
    public long size() {
      return size;
    }

    @Override
    byte[] read(long offset, int length) throws IOException {
      if (offset < 0 || length < 0 || offset + length > size) {
        throw new IOException("read of " + length + " bytes at " + offset + " outside the file");
      }
      byte[] out = new byte[length];
      int done = 0;
      try {
        while (done < length) {
          long at = offset + done;
          ByteBuffer piece = pieces.length == 1 ? pieces[0] : pieces[(int) (at / PIECE)];
          int within = (int) (pieces.length == 1 ? at : at % PIECE);
          int n = Math.min(length - done, piece.limit() - within);
          piece.duplicate().position(within).get(out, done, n);
          done += n;
        }
      } catch (InternalError err) { // a mapped page that vanished (the file was truncated)
        throw new IOException("the file changed while it was read: " + err.getMessage(), err);
      }
      return out;
    }
  }
}
