package dev.ptn;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

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
