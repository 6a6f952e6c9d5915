package dev.ptn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Whole-package validation from a ByteBuffer and from a mapped file: findings as values. */
class PackageValidatorTest {
  private static byte[] stored(String[] names, byte[][] contents) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
      for (int k = 0; k < names.length; k++) {
        ZipEntry entry = new ZipEntry(names[k]);
        entry.setMethod(ZipEntry.STORED);
        entry.setSize(contents[k].length);
        CRC32 crc = new CRC32();
        crc.update(contents[k]);
        entry.setCrc(crc.getValue());
        zip.putNextEntry(entry);
        zip.write(contents[k]);
        zip.closeEntry();
      }
    }
    return bytes.toByteArray();
  }

  private static List<String> rules(Report report) {
    List<String> out = new ArrayList<>();
    for (Finding f : report.findings()) out.add(f.rule());
    return out;
  }

  @Test
  void notAZipIsOneFinding() {
    Report report = PackageValidator.validate(ByteBuffer.wrap(new byte[100]), false);
    assertFalse(report.valid());
    assertEquals(List.of("zip-not-a-zip"), rules(report));
  }

  @Test
  void emptyBufferIsAFindingNotAnException() {
    Report report = PackageValidator.validate(ByteBuffer.allocate(0), true);
    assertEquals(List.of("zip-not-a-zip"), rules(report));
  }

  @Test
  void membersAndMetadataAreChecked() throws IOException {
    byte[] zip =
        stored(
            new String[] {"metadata.json", "notes.txt"},
            new byte[][] {
              "{\"get_vocab_size\": 4, \"get_bos_id\": 9}".getBytes(StandardCharsets.UTF_8),
              new byte[] {1}
            });
    Report report = PackageValidator.validate(ByteBuffer.wrap(zip), false);
    List<String> found = rules(report);
    assertTrue(found.contains("ptn-unknown-member"), found.toString());
    assertTrue(found.contains("ptn-missing-ptg"), found.toString());
    assertTrue(found.contains("llm-token-id-out-of-range"), found.toString());
    for (Finding f : report.findings()) {
      if (f.rule().equals("llm-token-id-out-of-range")) {
        assertEquals("metadata.json", f.member());
        assertEquals("/get_bos_id", f.pointer());
      }
    }
  }

  @Test
  void deepCheckFindsAFlippedDataByteTheFastCheckDoesNotRead(@TempDir Path tmp)
      throws IOException {
    byte[] zip = stored(new String[] {"notes.txt"}, new byte[][] {"hello".getBytes(StandardCharsets.UTF_8)});
    int at = new String(zip, StandardCharsets.ISO_8859_1).indexOf("hello");
    zip[at] = 'j';
    Path file = tmp.resolve("p.ptn");
    Files.write(file, zip);
    List<String> fast = rules(PackageValidator.validateFile(file, false));
    List<String> deep = rules(PackageValidator.validateFile(file, true));
    assertFalse(fast.contains("zip-crc-mismatch"));
    assertTrue(deep.contains("zip-crc-mismatch"), deep.toString());
    assertEquals(fast, deep.subList(0, fast.size()));
  }

  @Test
  void unreadableFileIsPtnIoError(@TempDir Path tmp) {
    Report report = PackageValidator.validateFile(tmp.resolve("absent.ptn"), false);
    assertEquals(List.of("ptn-io-error"), rules(report));
  }

  @Test
  void findingsJsonEscapesAsPython() {
    assertEquals("\"a\\u00fc\\\"\"", Report.jsonString("a\u00fc\""));
    assertEquals("null", Report.jsonString(null));
  }
}
