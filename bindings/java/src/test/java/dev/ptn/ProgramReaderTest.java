package dev.ptn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** program.ptg read by hand-laid buffers: the envelope, the version, the walk, the methods. */
class ProgramReaderTest {
  /**
   * A Program table at byte 16 (vtable at 8) with a version string at 28 and a methods vector of
   * no items at 36; {@code methodsSlot} false leaves the methods field out of the vtable.
   */
  private static byte[] program(String version, boolean methodsSlot) {
    ByteBuffer b = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(0, 16);
    byte[] ident = "NPTG".getBytes(StandardCharsets.US_ASCII);
    for (int k = 0; k < 4; k++) b.put(4 + k, ident[k]);
    b.putShort(8, (short) 8).putShort(10, (short) 12).putShort(12, (short) 4);
    b.putShort(14, (short) (methodsSlot ? 8 : 0));
    b.putInt(16, 8);
    b.putInt(20, 8);
    b.putInt(24, 12);
    b.putInt(28, 1);
    b.put(32, version.getBytes(StandardCharsets.US_ASCII)[0]);
    b.putInt(36, 0);
    return b.array();
  }

  private static List<String> found(ProgramReader read) {
    List<String> out = new ArrayList<>();
    for (Finding f : read.findings) out.add(f.rule() + " " + f.pointer());
    return out;
  }

  @Test
  void theEnvelopeIsCheckedFirst() {
    assertEquals(List.of("ptg-too-short null"), found(ProgramReader.read(new byte[5], 5)));
    byte[] other = program("1", true);
    other[4] = 'T';
    assertEquals(List.of("ptg-bad-identifier null"), found(ProgramReader.read(other, 40)));
    byte[] far = program("1", true);
    far[0] = 40;
    ProgramReader read = ProgramReader.read(far, 40);
    assertEquals(List.of("ptg-bad-root-offset null"), found(read));
    assertEquals("root table offset 40 is outside the member [8, 40)", read.findings.get(0).message());
  }

  @Test
  void aProgramWithoutMethodsIsReadAndRefused() {
    ProgramReader read = ProgramReader.read(program("1", true), 40);
    assertNotNull(read.program);
    assertEquals("1", read.program.str("version"));
    assertEquals(List.of("ptg-no-methods /methods"), found(read));
  }

  @Test
  void anUnknownVersionStopsTheReading() {
    ProgramReader read = ProgramReader.read(program("2", true), 40);
    assertNull(read.program);
    assertEquals(List.of("ptg-unknown-version /version"), found(read));
  }

  @Test
  void aRequiredFieldMustBePresent() {
    ProgramReader read = ProgramReader.read(program("1", false), 40);
    assertNull(read.program);
    assertEquals(List.of("ptg-missing-field "), found(read));
    assertEquals("Program.methods is required but absent", read.findings.get(0).message());
  }

  @Test
  void aVtableOutsideTheBufferIsMalformed() {
    byte[] bad = program("1", true);
    ByteBuffer.wrap(bad).order(ByteOrder.LITTLE_ENDIAN).putInt(16, -100);
    ProgramReader read = ProgramReader.read(bad, 40);
    assertEquals(List.of("ptg-malformed "), found(read));
    assertEquals("Program table at byte 16 has its vtable at 116, outside the buffer", read.findings.get(0).message());
  }

  @Test
  void methodsVectorPastTheEndIsMalformedAtItsPointer() {
    byte[] bad = program("1", true);
    ByteBuffer.wrap(bad).order(ByteOrder.LITTLE_ENDIAN).putInt(36, 1000);
    ProgramReader read = ProgramReader.read(bad, 40);
    assertEquals(List.of("ptg-malformed /methods"), found(read));
  }
}
