package dev.ptn;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32;

/**
 * Whole-package validation (ptn/validation.py): every finding, from the container inwards,
 * with the same rule ids, severities, members, pointers, order and findings budget as the
 * Python reference. The fast check reads the zip directory, the local headers, the safetensors
 * header and the JSON members; the deep check adds the CRC-32 of every member, the hidden data
 * descriptors and the BOOL bytes. Hostile bytes never throw: every fault is a {@link Finding}.
 *
 * <p>Not checked, declared as a gap of this binding in tools/conformance/capabilities.py: the
 * operator rules of spec section 4.4 (the binding has no operator registry).
 */
public final class PackageValidator {
  static final String PTG = ProgramReader.PTG;
  static final String SAFETENSORS = SafetensorsHeader.MEMBER;
  static final String ALIASES = "aliases.json";
  static final String METADATA = MetadataBase.MEMBER;
  private static final List<String> KNOWN = Arrays.asList(PTG, SAFETENSORS, ALIASES, METADATA);
  private static final int CHUNK = 8 << 20;

  private PackageValidator() {}

  /** Validate the package in {@code buffer} (position to limit); deep adds the CRC-32s. */
  public static Report validate(ByteBuffer buffer, boolean deep) {
    return validate(PackageSource.of(buffer), deep);
  }

  /** Validate the file behind {@code channel}, memory-mapped. */
  public static Report validate(FileChannel channel, boolean deep) {
    try {
      return validate(PackageSource.map(channel), deep);
    } catch (IOException err) {
      return ioError(err);
    }
  }

  /** Validate the file at {@code path}, memory-mapped; ptn-io-error when it cannot be read. */
  public static Report validateFile(Path path, boolean deep) {
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      return validate(channel, deep);
    } catch (IOException err) {
      return ioError(err);
    }
  }

  private static Report ioError(IOException err) {
    List<Finding> out = new ArrayList<>();
    out.add(Finding.error("ptn-io-error", null, null, "cannot read the file: " + err.getMessage()));
    return new Report(out);
  }

  /** Validate a package source. */
  public static Report validate(PackageSource source, boolean deep) {
    List<Finding> findings = new ArrayList<>();
    Budget budget = new Budget();
    try {
      for (Finding f : stages(source, deep)) {
        if (budget.admit(f)) findings.add(f);
      }
      findings.addAll(budget.summaries());
    } catch (IOException err) {
      findings.addAll(budget.summaries());
      findings.add(Finding.error("ptn-io-error", null, null, "cannot read the file: " + err.getMessage()));
    } catch (RuntimeException | StackOverflowError err) {
      findings.addAll(budget.summaries());
      findings.add(
          Finding.error(
              "ptn-internal-error",
              null,
              null,
              "the validator failed while checking this file (" + err + "); this is a bug in the"
                  + " ptn Java binding, not a verdict on the file: please report it"));
    }
    List<Finding> out = new ArrayList<>();
    for (Finding f : findings) {
      // A rule and severity that spec.md does not define is a bug of the binding.
      if (!f.severity().equals(Rules.SEVERITY.get(f.rule()))) {
        out.add(
            Finding.error(
                "ptn-internal-error",
                f.member(),
                f.pointer(),
                "the validator made a finding of " + f.rule() + " (" + f.severity()
                    + "), which spec.md does not define"));
      } else {
        out.add(f);
      }
    }
    return new Report(out);
  }

  private static List<Finding> stages(PackageSource r, boolean deep) throws IOException {
    List<Finding> out = new ArrayList<>();
    ZipMembers zip;
    try {
      zip = ZipMembers.read(r);
    } catch (PtnException err) {
      out.add(Finding.of(err, null));
      return out;
    }
    out.addAll(zip.findings);
    List<String> names = new ArrayList<>();
    for (ZipMembers.Member m : zip.members) names.add(m.name);
    out.addAll(membership(names));
    Map<String, ZipMembers.Member> byName = new LinkedHashMap<>();
    for (ZipMembers.Member m : zip.members) byName.put(m.name, m);
    // A member whose stored bytes are not its content has its one finding already.
    Set<String> unreadable = new HashSet<>();
    for (ZipMembers.Member m : byName.values()) if (m.fault != null) unreadable.add(m.name);
    ZipMembers.Member ptg = unreadable.contains(PTG) ? null : byName.get(PTG);
    ProgramTable program = null;
    boolean programFaults = false; // an error of program.ptg: its facts are not compared (9.8)
    if (ptg != null) {
      // The whole member, to verify its tables (only the envelope of one over the runtime's cap).
      long take = ProgramReader.readsTables(ptg.size) ? ptg.size : Math.min(8, ptg.size);
      ProgramReader read = ProgramReader.read(r.read(ptg.dataOffset, (int) take), ptg.size);
      program = read.program;
      programFaults = hasError(read.findings);
      out.addAll(read.findings);
    }
    ZipMembers.Member st = unreadable.contains(SAFETENSORS) ? null : byName.get(SAFETENSORS);
    SafetensorsHeader header = null;
    if (st != null) {
      try {
        header = SafetensorsHeader.read(r, st);
        out.addAll(header.findings);
      } catch (PtnException err) {
        unreadable.add(SAFETENSORS);
        out.add(Finding.of(err, SAFETENSORS));
      }
    }
    ZipMembers.Member al = unreadable.contains(ALIASES) ? null : byName.get(ALIASES);
    Map<String, String> aliasMap = new LinkedHashMap<>();
    List<Finding> aliasFindings = new ArrayList<>();
    if (al != null) {
      // Owners can be checked only against a header that was read; an owner whose entry is
      // broken is still a key of it (its own finding says what is wrong).
      Set<String> keys = null;
      if (!unreadable.contains(SAFETENSORS)) {
        keys = new HashSet<>();
        if (header != null) {
          keys.addAll(header.entries.keySet());
          keys.addAll(brokenKeys(header.findings));
        }
      }
      try {
        aliasFindings = aliases(jsonBytes(r, al), keys, aliasMap);
        out.addAll(aliasFindings);
      } catch (PtnException err) {
        unreadable.add(ALIASES);
        out.add(Finding.of(err, ALIASES));
      }
    }
    if (program != null) {
      List<Finding> found = new ArrayList<>(header == null ? new ArrayList<>() : header.findings);
      found.addAll(aliasFindings);
      Map<String, SafetensorsHeader.Tensor> tensors =
          header == null ? new LinkedHashMap<>() : header.entries;
      ProgramConstants.Stored stored =
          new ProgramConstants.Stored(
              unreadable.contains(SAFETENSORS) ? null : tensors,
              unreadable.contains(ALIASES) ? null : aliasMap,
              brokenKeys(found));
      List<Finding> constants = ProgramConstants.constantFindings(program, stored, ProgramLayout.LAYOUT);
      programFaults |= hasError(constants);
      out.addAll(constants);
    }
    ZipMembers.Member meta = unreadable.contains(METADATA) ? null : byName.get(METADATA);
    if (meta != null) {
      byte[] bytes = null;
      try {
        bytes = jsonBytes(r, meta);
        Metadata parsed = Metadata.parse(bytes);
        out.addAll(MetadataFaults.nearWarnings(parsed.names(), Metadata.TABLES));
        if (program != null && !programFaults) out.addAll(agreement(program, bytes));
      } catch (PtnException err) {
        out.add(Finding.of(err, METADATA));
        if (bytes != null && (err.rule().startsWith("metadata-") || err.rule().startsWith("llm-"))) {
          List<Finding> all = MetadataFaults.all(bytes, Metadata.TABLES);
          out.addAll(all.subList(Math.min(1, all.size()), all.size()));
          if (program != null && !programFaults) out.addAll(agreement(program, bytes));
        }
      }
    }
    if (deep) {
      out.addAll(crcFindings(r, zip.members));
      if (header != null && !header.entries.isEmpty()) out.addAll(boolFindings(r, st, header));
    }
    return out;
  }

  private static boolean hasError(List<Finding> findings) {
    for (Finding f : findings) if (f.severity().equals("error") && PTG.equals(f.member())) return true;
    return false;
  }

  /** The metadata against the program (spec 9.8). */
  private static List<Finding> agreement(ProgramTable program, byte[] metadata) {
    MetadataFaults.Inputs inputs = MetadataFaults.inputs(metadata, Metadata.TABLES);
    if (inputs == null) return new ArrayList<>();
    return LlmAgreement.findings(LlmAgreement.facts(program, ProgramLayout.LAYOUT), inputs);
  }

  private static List<Finding> membership(List<String> names) {
    List<Finding> out = new ArrayList<>();
    for (String name : names) {
      if (KNOWN.contains(name)) continue;
      String last = name.toLowerCase(Locale.ROOT);
      last = last.substring(last.lastIndexOf('/') + 1);
      String hint = "";
      for (String k : KNOWN) if (k.equals(last)) hint = " (did you mean " + k + "?)";
      out.add(
          Finding.error(
              "ptn-unknown-member",
              name,
              null,
              "unknown member " + Text.repr(name) + hint + "; a package holds only "
                  + String.join(", ", KNOWN)));
    }
    if (!names.contains(PTG)) {
      out.add(Finding.error("ptn-missing-ptg", PTG, null, "program.ptg is missing; every package needs it"));
    }
    if (names.contains(ALIASES) && !names.contains(SAFETENSORS)) {
      out.add(
          Finding.error(
              "ptn-aliases-without-constants",
              ALIASES,
              null,
              "aliases.json without program.safetensors: its owners name no constant"));
    }
    return out;
  }

  /** A JSON member's bytes; json-too-large without reading it when it exceeds the cap. */
  private static byte[] jsonBytes(PackageSource r, ZipMembers.Member m) throws IOException {
    if (m.size > StrictJson.MAX_JSON_BYTES) {
      throw new PtnException(
          "json-too-large",
          "document of " + m.size + " bytes exceeds " + StrictJson.MAX_JSON_BYTES,
          m.name,
          null);
    }
    return r.read(m.dataOffset, (int) m.size);
  }

  /** Constant keys an error of program.safetensors or aliases.json names (the first token of
   * its pointer), as ptn.package.validate.broken_keys. */
  private static Set<String> brokenKeys(List<Finding> findings) {
    Set<String> broken = new HashSet<>();
    for (Finding f : findings) {
      String p = f.pointer();
      boolean stored = SAFETENSORS.equals(f.member()) || ALIASES.equals(f.member());
      if (f.isError() && stored && p != null && !p.isEmpty() && !f.rule().equals("st-offsets-gap")) {
        int slash = p.indexOf('/', 1);
        String token = p.substring(1, slash < 0 ? p.length() : slash);
        broken.add(token.replace("~1", "/").replace("~0", "~"));
      }
    }
    return broken;
  }

  /** aliases.json against the safetensors keys (null: unknown, so owners are not checked); the
   * entries that break no rule go into {@code good}. */
  private static List<Finding> aliases(byte[] bytes, Set<String> keys, Map<String, String> good) {
    Object value = StrictJson.parse(bytes, ALIASES, true);
    if (!(value instanceof Map)) {
      throw new PtnException("aliases-not-object", "aliases.json is not a JSON object", ALIASES, "");
    }
    Map<?, ?> map = (Map<?, ?>) value;
    Budget findings = new Budget();
    if (map.isEmpty()) {
      findings.append(Finding.warning("aliases-empty", ALIASES, "", "empty aliases.json: omit the member"));
    }
    for (Map.Entry<?, ?> e : map.entrySet()) {
      String alias = (String) e.getKey();
      Object owner = e.getValue();
      String rule = null;
      String message = null;
      if (alias.isEmpty() || !(owner instanceof String)) {
        rule = "aliases-bad-entry";
        message = "an alias is a non-empty name mapped to a string";
      } else if (alias.equals(SafetensorsHeader.METADATA_KEY)
          || owner.equals(SafetensorsHeader.METADATA_KEY)) {
        rule = "aliases-reserved-key";
        message = "__metadata__ is reserved";
      } else if (keys != null && keys.contains(alias)) {
        rule = "aliases-shadows-tensor";
        message = Text.repr(alias) + " is itself a tensor key";
      } else if (keys != null && !keys.contains(owner)) {
        rule = "aliases-missing-owner";
        message = "owner " + Text.repr(owner) + " is not a tensor key";
      }
      if (rule == null) {
        good.put(alias, (String) owner);
        continue;
      }
      if (findings.room(rule, "error")) {
        findings.append(Finding.error(rule, ALIASES, JsonPointer.of(alias), message));
      } else {
        findings.skip(rule, "error", 1);
      }
    }
    return findings.finish();
  }

  /** The CRC-32 of each member whose data starts in no other's and is its content. */
  private static List<Finding> crcFindings(PackageSource r, List<ZipMembers.Member> members)
      throws IOException {
    List<ZipMembers.Member> sorted = new ArrayList<>(members);
    sorted.sort(
        (a, b) ->
            a.dataOffset != b.dataOffset
                ? Long.compare(a.dataOffset, b.dataOffset)
                : Long.compare(a.size, b.size));
    List<Finding> out = new ArrayList<>();
    long checkedTo = 0;
    for (ZipMembers.Member m : sorted) {
      if (m.dataOffset < checkedTo) continue;
      checkedTo = m.dataOffset + m.size;
      if (m.fault != null) continue;
      CRC32 crc = new CRC32();
      DecoyScan decoy = m.descriptor && m.method == 0 ? new DecoyScan() : null;
      for (long at = 0; at < m.size; at += CHUNK) {
        byte[] chunk = r.read(m.dataOffset + at, (int) Math.min(CHUNK, m.size - at));
        crc.update(chunk);
        if (decoy != null) decoy.feed(chunk, false);
      }
      if (crc.getValue() != m.crc32) {
        out.add(
            Finding.error(
                "zip-crc-mismatch",
                m.name,
                null,
                "the CRC-32 of the " + m.size + " data bytes of member '" + m.name + "' is "
                    + ZipSink.hex(crc.getValue(), 8) + " but the central directory records "
                    + ZipSink.hex(m.crc32, 8) + ": the data was altered or corrupted"));
      }
      if (decoy != null) {
        decoy.finish();
        if (decoy.found >= 0) {
          out.add(
              Finding.error(
                  "zip-descriptor-decoy",
                  m.name,
                  null,
                  "member '" + m.name + "' (flag bit 3) holds a data descriptor after "
                      + decoy.found + " of its " + m.size + " data bytes, with those sizes: a"
                      + " reader that ends stored data at its descriptor stops there and reads"
                      + " the rest as other members"));
        }
      }
    }
    return out;
  }

  private static List<Finding> boolFindings(
      PackageSource r, ZipMembers.Member m, SafetensorsHeader header) throws IOException {
    Budget findings = new Budget();
    for (SafetensorsHeader.Tensor t : header.entries.values()) {
      long nbytes = t.end - t.begin;
      if (!t.dtype.equals("BOOL") || nbytes == 0) continue;
      long base = m.dataOffset + header.dataStart + t.begin;
      scan:
      for (long at = 0; at < nbytes; at += CHUNK) {
        byte[] chunk = r.read(base + at, (int) Math.min(CHUNK, nbytes - at));
        for (int k = 0; k < chunk.length; k++) {
          if ((chunk[k] & 0xff) > 1) {
            findings.append(
                Finding.error(
                    "st-bool-not-0-or-1",
                    SAFETENSORS,
                    JsonPointer.of(t.key),
                    "element " + (at + k) + " is the byte " + (chunk[k] & 0xff)
                        + "; a BOOL byte must be 0 or 1"));
            break scan;
          }
        }
      }
    }
    return findings.finish();
  }
}
