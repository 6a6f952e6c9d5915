package dev.ptn;

import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The safetensors header of program.safetensors (ptn.safetensors.header.read_header). */
final class SafetensorsHeader {
  static final String MEMBER = "program.safetensors";
  static final String METADATA_KEY = "__metadata__";
  private static final long MAX_HEADER_BYTES = 64L * 1024 * 1024;
  private static final int MAX_RANK = 64;
  private static final BigInteger MAX_DIM = BigInteger.valueOf((1L << 31) - 1);
  private static final BigInteger MAX_NBYTES = BigInteger.valueOf(Long.MAX_VALUE);
  private static final List<String> ENTRY_FIELDS = Arrays.asList("dtype", "shape", "data_offsets");
  private static final Map<String, Integer> ITEMSIZE = new HashMap<>();

  static {
    String[] names = {
      "F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64", "U16", "U32", "U64"
    };
    int[] sizes = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1, 8, 2, 4, 8};
    for (int k = 0; k < names.length; k++) ITEMSIZE.put(names[k], sizes[k]);
  }

  /** One readable tensor entry. */
  static final class Tensor {
    String key;
    String dtype;
    long[] shape;
    long begin;
    long end;
  }

  final Map<String, Tensor> entries = new LinkedHashMap<>();
  long dataStart;
  List<Finding> findings;

  private static PtnException fail(String rule, String message) {
    return new PtnException(rule, message, MEMBER, "");
  }

  static BigInteger integer(Object v) {
    if (v instanceof Long) return BigInteger.valueOf((Long) v);
    if (v instanceof BigInteger) return (BigInteger) v;
    return null;
  }

  private static String shapeProblem(Object shape, int size) {
    if (!(shape instanceof List)) return "shape must be a list of non-negative integers";
    List<?> dims = (List<?>) shape;
    if (dims.size() > MAX_RANK) return "rank " + dims.size() + " exceeds " + MAX_RANK;
    BigInteger nbytes = BigInteger.valueOf(size);
    for (Object dim : dims) {
      BigInteger d = integer(dim);
      if (d == null || d.signum() < 0) return "dimension " + Text.repr(dim) + " is not a non-negative integer";
      if (d.compareTo(MAX_DIM) > 0) return "dimension " + d + " exceeds " + MAX_DIM;
      nbytes = nbytes.multiply(d.signum() == 0 ? BigInteger.ONE : d);
    }
    if (nbytes.compareTo(MAX_NBYTES) > 0) {
      return "the non-zero dimensions times the " + size + "-byte element size exceed 2**63-1"
          + " (int64, numpy's limit), even if a zero dimension leaves no element";
    }
    return null;
  }

  private static BigInteger[] offsetsOf(Object value) {
    if (!(value instanceof List) || ((List<?>) value).size() != 2) return null;
    BigInteger begin = integer(((List<?>) value).get(0));
    BigInteger end = integer(((List<?>) value).get(1));
    if (begin == null || end == null || begin.signum() < 0 || begin.compareTo(end) > 0) return null;
    return new BigInteger[] {begin, end};
  }

  private static Finding err(String rule, String where, String message) {
    return Finding.error(rule, MEMBER, where, message);
  }

  private static Finding warn(String rule, String where, String message) {
    return Finding.warning(rule, MEMBER, where, message);
  }

  /** Validate the header of member m; PtnException when none can be read. */
  static SafetensorsHeader read(PackageSource r, ZipMembers.Member m) throws IOException {
    long size = m.size;
    if (size < 8) throw fail("st-truncated", size + " bytes: no 8-byte header length");
    byte[] head = r.read(m.dataOffset, 8);
    BigInteger n = ZipSink.u64(head, 0);
    if (n.compareTo(BigInteger.valueOf(MAX_HEADER_BYTES)) > 0
        || n.compareTo(BigInteger.valueOf(size - 8)) > 0) {
      throw fail(
          "st-header-too-large",
          "header length " + n + " exceeds " + Math.min(MAX_HEADER_BYTES, size - 8));
    }
    int headerLen = n.intValueExact();
    Object header = StrictJson.parse(r.read(m.dataOffset + 8, headerLen), MEMBER, true);
    if (!(header instanceof Map)) throw fail("st-header-not-object", "the header is not a JSON object");
    SafetensorsHeader out = new SafetensorsHeader();
    out.dataStart = 8 + headerLen;
    BigInteger dataLen = BigInteger.valueOf(size - out.dataStart);
    Budget findings = new Budget();
    List<Object[]> spans = new ArrayList<>();
    boolean allReadable = true;
    for (Map.Entry<?, ?> item : ((Map<?, ?>) header).entrySet()) {
      String key = (String) item.getKey();
      Object entry = item.getValue();
      String here = JsonPointer.of(key);
      if (key.equals(METADATA_KEY)) {
        boolean strings = entry instanceof Map;
        if (strings) {
          for (Object v : ((Map<?, ?>) entry).values()) strings &= v instanceof String;
        }
        if (!strings) {
          findings.append(err("st-reserved-key", here, "__metadata__ must be an object of str -> str"));
        } else if (!((Map<?, ?>) entry).isEmpty()) {
          findings.append(
              warn(
                  "st-metadata-present",
                  here,
                  "non-empty __metadata__: the proposed C++ loader (ExecuTorch PR 24943) accepts"
                      + " only {}; put package metadata in metadata.json"));
        }
        continue;
      }
      Map<?, ?> fields = entry instanceof Map ? (Map<?, ?>) entry : null;
      BigInteger[] offs = fields != null ? offsetsOf(fields.get("data_offsets")) : null;
      if (offs == null) {
        allReadable = false;
      } else {
        spans.add(new Object[] {offs[0], offs[1], key});
      }
      if (key.isEmpty()
          || fields == null
          || fields.size() != ENTRY_FIELDS.size()
          || !fields.keySet().containsAll(ENTRY_FIELDS)) {
        String problem =
            key.isEmpty()
                ? "the tensor key is empty; every key must name its tensor"
                : "entry must be an object of dtype/shape/data_offsets";
        findings.append(err("st-entry-invalid", here, problem));
        continue;
      }
      boolean ok = true;
      Object dtype = fields.get("dtype");
      Integer itemSize = dtype instanceof String ? ITEMSIZE.get(dtype) : null;
      if (itemSize == null) {
        findings.append(err("st-unsupported-dtype", here + "/dtype", "unsupported dtype " + Text.repr(dtype)));
        ok = false;
      } else if (dtype.equals("C64")) {
        findings.append(warn("st-complex64", here + "/dtype", "C64: the proposed ExecuTorch C++ loader rejects it"));
      }
      Object shape = fields.get("shape");
      String problem = shapeProblem(shape, itemSize == null ? 1 : itemSize);
      if (problem != null) {
        findings.append(err("st-bad-shape", here + "/shape", problem));
        ok = false;
      }
      if (offs == null) {
        findings.append(
            err(
                "st-bad-offsets",
                here + "/data_offsets",
                "data_offsets must be [begin, end], non-negative integers, begin <= end"));
        continue;
      }
      if (offs[1].compareTo(dataLen) > 0) {
        findings.append(
            err(
                "st-data-length",
                here + "/data_offsets",
                "ends at " + offs[1] + ", past the " + dataLen + "-byte data section"));
        ok = false;
      }
      if (!ok) continue;
      List<?> dims = (List<?>) shape;
      Tensor t = new Tensor();
      t.key = key;
      t.dtype = (String) dtype;
      t.shape = new long[dims.size()];
      BigInteger numel = BigInteger.ONE;
      for (int k = 0; k < t.shape.length; k++) {
        t.shape[k] = (Long) dims.get(k);
        numel = numel.multiply(BigInteger.valueOf(t.shape[k]));
      }
      t.begin = offs[0].longValueExact();
      t.end = offs[1].longValueExact();
      BigInteger nbytes = offs[1].subtract(offs[0]);
      BigInteger width = BigInteger.valueOf(itemSize);
      if (!nbytes.equals(numel.multiply(width))) {
        findings.append(
            err(
                "st-size-mismatch",
                here + "/data_offsets",
                nbytes + " bytes for " + numel + " x " + itemSize + "-byte elements"));
        continue;
      }
      if (itemSize > 1 && numel.signum() != 0 && (out.dataStart + t.begin) % itemSize != 0) {
        findings.append(
            Finding.advice(
                "st-unaligned-tensor",
                MEMBER,
                here + "/data_offsets",
                "data at member offset " + (out.dataStart + t.begin) + " is not " + itemSize
                    + "-byte aligned"));
      }
      out.entries.put(key, t);
    }
    spans.sort(
        (a, b) -> {
          int c = ((BigInteger) a[0]).compareTo((BigInteger) b[0]);
          if (c == 0) c = ((BigInteger) a[1]).compareTo((BigInteger) b[1]);
          return c != 0 ? c : Text.byCodePoint((String) a[2], (String) b[2]);
        });
    BigInteger reached = BigInteger.ZERO;
    for (Object[] span : spans) {
      BigInteger begin = (BigInteger) span[0];
      BigInteger end = (BigInteger) span[1];
      String where = JsonPointer.of(span[2], "data_offsets");
      if (begin.compareTo(reached) < 0) {
        findings.append(
            err("st-offsets-overlap", where, "[" + begin + ", " + end + "] overlaps data before " + reached));
      } else if (begin.compareTo(reached) > 0 && allReadable) {
        findings.append(err("st-offsets-gap", where, "gap of " + begin.subtract(reached) + " bytes"));
      }
      if (end.compareTo(reached) > 0) reached = end;
    }
    if (allReadable && reached.compareTo(dataLen) < 0) {
      findings.append(err("st-data-length", "", dataLen.subtract(reached) + " bytes after the last tensor"));
    }
    out.findings = findings.finish();
    return out;
  }
}
