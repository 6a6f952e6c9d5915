package dev.ptn;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Reading a package's metadata.json straight from the package (validate it first with {@link
 * PackageValidator} to know the rest is sound): the zip directory is read, then the member's
 * bytes only.
 */
public final class Packages {
  private Packages() {}

  /**
   * The metadata of the package at {@code path}, parsed and checked (spec chapters 8 and 9);
   * null when the package has no metadata.json. Throws {@link PtnException} when the zip
   * directory cannot be read or the member cannot be read or breaks a rule, and IOException
   * when the file cannot be read.
   */
  public static Metadata readMetadata(Path path) throws IOException {
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      return readMetadata(PackageSource.map(channel));
    }
  }

  /**
   * The SHA-256 of the file at {@code path} (every byte of the package), in lowercase hex: the
   * digest a signature of the package names (spec.md section 12), for a caller's own check
   * against a signature it verified. Read in 1 MiB pieces: memory does not grow with the file.
   */
  public static String sha256(Path path) throws IOException {
    MessageDigest digest = sha256Digest();
    ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      long offset = 0;
      int n;
      while ((n = channel.read(buffer, offset)) > 0) {
        buffer.flip();
        digest.update(buffer);
        buffer.clear();
        offset += n;
      }
    }
    return hex(digest.digest());
  }

  /** The SHA-256 of the package in {@code source} (all of its bytes), in lowercase hex. */
  public static String sha256(PackageSource source) throws IOException {
    MessageDigest digest = sha256Digest();
    long size = source.size();
    for (long offset = 0; offset < size; offset += 1 << 20) {
      digest.update(source.read(offset, (int) Math.min(1 << 20, size - offset)));
    }
    return hex(digest.digest());
  }

  private static MessageDigest sha256Digest() {
    try {
      return MessageDigest.getInstance("SHA-256"); // every Java platform must provide it
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder(2 * bytes.length);
    for (byte b : bytes) out.append(String.format("%02x", b & 0xff));
    return out.toString();
  }

  /** The metadata of the package in {@code source}; null when it has no metadata.json. */
  public static Metadata readMetadata(PackageSource source) throws IOException {
    ZipMembers.Member found = null;
    for (ZipMembers.Member m : ZipMembers.read(source).members) {
      if (m.name.equals(MetadataBase.MEMBER)) found = m; // the last, as the validator reads
    }
    if (found == null) return null;
    if (found.fault != null) {
      throw new PtnException(
          found.fault, "metadata.json cannot be read: its stored bytes are not its content",
          MetadataBase.MEMBER, null);
    }
    if (found.size > StrictJson.MAX_JSON_BYTES) {
      throw new PtnException(
          "json-too-large",
          "document of " + found.size + " bytes exceeds " + StrictJson.MAX_JSON_BYTES,
          MetadataBase.MEMBER,
          null);
    }
    return Metadata.parse(source.read(found.dataOffset, (int) found.size));
  }
}
