// Whole-package validation over a ByteSource (ptn/validation.py): every finding, from the
// container inwards, with the same rule ids, severities, order and findings budget as the
// Python reference. The fast check reads the zip directory, the local headers, the
// safetensors header and the JSON members; the deep check adds a streamed CRC-32 of every
// member and the BOOL bytes. Hostile bytes never throw: every fault is a finding.

import type { ByteSource } from "./byte_source.js";
import type {
  FileReport,
  Finding,
  Inspection,
  MemberRow,
  MetadataRow,
  PackageTables,
  Severity,
  TensorRow,
  UnreadablePart,
  ValidateOptions,
} from "./package_api.js";
import { MAX_JSON_BYTES, PtnError, parseJson, pointer, type JsonValue } from "./strict_json.js";
import { Budget, raw } from "./budget.js";
import { readProgram, readsTables, type Decoded } from "./program.js";
import { constantFindings } from "./program_constants.js";
import { graphFindings } from "./program_effects.js";
import { operatorTable } from "./program_operators.js";
import { undefinedFindings } from "./program_values.js";
import { methodRows } from "./program_methods.js";
import { agreementFindings, programFacts } from "./llm_agreement.js";
import { byCodePoint, repr } from "./pyrepr.js";
import { crc32, DecoyScan, readMembers, Reader, u32, type Crc32, type Member, type RawFinding } from "./zip_reader.js";

export { MAX_FINDINGS_PER_FILE, MAX_FINDINGS_PER_RULE } from "./budget.js";

export const PTG = "program.ptg";
export const SAFETENSORS = "program.safetensors";
export const ALIASES = "aliases.json";
export const METADATA = "metadata.json";
const KNOWN = [PTG, SAFETENSORS, ALIASES, METADATA];
const METADATA_KEY = "__metadata__";
const MAX_HEADER_BYTES = 64 * 1024 * 1024;
const MAX_RANK = 64;
const MAX_DIM = 2n ** 31n - 1n;
const MAX_NBYTES = 2n ** 63n - 1n;
const ENTRY_FIELDS = ["dtype", "shape", "data_offsets"];
// Every table looked up by a name from a file is a Map: a plain object answers
// "__proto__", "constructor", "toString"... with what every object inherits.
const ITEMSIZE: ReadonlyMap<string, number> = new Map([
  ["F64", 8], ["F32", 4], ["F16", 2], ["BF16", 2], ["I64", 8], ["I32", 4], ["I16", 2],
  ["I8", 1], ["U8", 1], ["BOOL", 1], ["C64", 8], ["U16", 2], ["U32", 4], ["U64", 8],
]);
/** Deep reads go in chunks of this many bytes (one request each for a URL). */
const CHUNK = 8 << 20;
const METHOD_DEFLATE = 8;

function fromError(err: PtnError, member?: string, severity: Severity = "error"): RawFinding {
  return raw(err.rule, severity, err.member ?? member ?? null, err.pointer, err.detail);
}

function membershipFindings(names: string[]): RawFinding[] {
  const findings: RawFinding[] = [];
  const byLower = new Map(KNOWN.map((k) => [k.toLowerCase(), k]));
  for (const name of names) {
    if (!KNOWN.includes(name)) {
      const lowered = byLower.get(name.toLowerCase().split("/").pop() ?? "");
      const hint = lowered ? ` (did you mean ${lowered}?)` : "";
      findings.push(
        raw("ptn-unknown-member", "error", name, null,
          `unknown member ${repr(name)}${hint}; a package holds only ${KNOWN.join(", ")}`),
      );
    }
  }
  const present = new Set(names);
  if (!present.has(PTG)) {
    findings.push(raw("ptn-missing-ptg", "error", PTG, null, "program.ptg is missing; every package needs it"));
  }
  if (present.has(ALIASES) && !present.has(SAFETENSORS)) {
    findings.push(raw("ptn-aliases-without-constants", "error", ALIASES, null,
      "aliases.json without program.safetensors: its owners name no constant"));
  }
  return findings;
}

interface TensorInfo {
  key: string;
  dtype: string;
  shape: bigint[];
  begin: bigint;
  end: bigint;
}

function isInt(v: unknown): v is bigint {
  return typeof v === "bigint";
}

function shapeProblem(shape: JsonValue | undefined, size: number): string | null {
  if (!Array.isArray(shape)) return "shape must be a list of non-negative integers";
  if (shape.length > MAX_RANK) return `rank ${shape.length} exceeds ${MAX_RANK}`;
  let nbytes = BigInt(size);
  for (const dim of shape) {
    if (!isInt(dim) || dim < 0n) return `dimension ${repr(dim)} is not a non-negative integer`;
    if (dim > MAX_DIM) return `dimension ${dim} exceeds ${MAX_DIM}`;
    nbytes *= dim || 1n;
  }
  if (nbytes > MAX_NBYTES) {
    return (
      `the non-zero dimensions times the ${size}-byte element size exceed 2**63-1 (int64, numpy's ` +
      "limit), even if a zero dimension leaves no element"
    );
  }
  return null;
}

function offsetsOf(value: JsonValue | undefined): [bigint, bigint] | null {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [begin, end] = value;
  if (!isInt(begin) || !isInt(end) || begin < 0n || begin > end) return null;
  return [begin, end];
}

/** Validate the safetensors header (ptn.safetensors.header.read_header); throws PtnError when none can be read. */
async function readHeader(
  r: Reader,
  m: Member,
): Promise<{ entries: Map<string, TensorInfo>; dataStart: number; findings: RawFinding[] }> {
  const size = m.size;
  if (size < 8) {
    throw new PtnError("st-truncated", `${size} bytes: no 8-byte header length`, { member: SAFETENSORS, pointer: "" });
  }
  const head = await r.bytes(m.dataOffset, 8);
  const n = BigInt(u32(head, 0)) + (BigInt(u32(head, 4)) << 32n);
  if (n > BigInt(MAX_HEADER_BYTES) || n > BigInt(size - 8)) {
    throw new PtnError("st-header-too-large", `header length ${n} exceeds ${Math.min(MAX_HEADER_BYTES, size - 8)}`, {
      member: SAFETENSORS,
      pointer: "",
    });
  }
  const headerLen = Number(n);
  const header = parseJson(await r.bytes(m.dataOffset + 8, headerLen), { member: SAFETENSORS });
  if (!(header instanceof Map)) {
    throw new PtnError("st-header-not-object", "the header is not a JSON object", { member: SAFETENSORS, pointer: "" });
  }
  const dataStart = 8 + headerLen;
  const dataLen = BigInt(size - dataStart);
  const findings = new Budget();
  const entries = new Map<string, TensorInfo>();
  const spans: [bigint, bigint, string][] = [];
  let allReadable = true;
  const err = (rule: string, where: string, message: string) => raw(rule, "error", SAFETENSORS, where, message);
  const warn = (rule: string, where: string, message: string) => raw(rule, "warning", SAFETENSORS, where, message);

  for (const [key, entry] of header) {
    const here = pointer(key);
    if (key === METADATA_KEY) {
      if (!(entry instanceof Map) || ![...entry.values()].every((v) => typeof v === "string")) {
        findings.append(err("st-reserved-key", here, "__metadata__ must be an object of str -> str"));
      } else if (entry.size) {
        findings.append(warn("st-metadata-present", here, "non-empty __metadata__: the proposed C++ loader (ExecuTorch PR 24943) accepts only {}; put package metadata in metadata.json"));
      }
      continue;
    }
    const offs = entry instanceof Map ? offsetsOf(entry.get("data_offsets")) : null;
    if (offs === null) allReadable = false;
    else spans.push([offs[0], offs[1], key]);
    if (
      key === "" ||
      !(entry instanceof Map) ||
      entry.size !== ENTRY_FIELDS.length ||
      !ENTRY_FIELDS.every((f) => entry.has(f))
    ) {
      const problem =
        key === ""
          ? "the tensor key is empty; every key must name its tensor"
          : "entry must be an object of dtype/shape/data_offsets";
      findings.append(err("st-entry-invalid", here, problem));
      continue;
    }
    let ok = true;
    const dtype = entry.get("dtype");
    if (typeof dtype !== "string" || !ITEMSIZE.has(dtype)) {
      findings.append(err("st-unsupported-dtype", here + "/dtype", `unsupported dtype ${repr(dtype)}`));
      ok = false;
    } else if (dtype === "C64") {
      findings.append(warn("st-complex64", here + "/dtype", "C64: the proposed ExecuTorch C++ loader rejects it"));
    }
    const shape = entry.get("shape");
    const problem = shapeProblem(shape, typeof dtype === "string" ? (ITEMSIZE.get(dtype) ?? 1) : 1);
    if (problem || !Array.isArray(shape)) {
      findings.append(err("st-bad-shape", here + "/shape", problem || "shape is not a list"));
      ok = false;
    }
    if (offs === null) {
      findings.append(err("st-bad-offsets", here + "/data_offsets",
        "data_offsets must be [begin, end], non-negative integers, begin <= end"));
      continue;
    }
    const [begin, end] = offs;
    if (end > dataLen) {
      findings.append(err("st-data-length", here + "/data_offsets", `ends at ${end}, past the ${dataLen}-byte data section`));
      ok = false;
    }
    if (!ok) continue;
    const dims = shape as bigint[];
    const info: TensorInfo = { key, dtype: dtype as string, shape: dims, begin, end };
    const itemSize = BigInt(ITEMSIZE.get(dtype as string) ?? 1);
    const numel = dims.reduce((a, d) => a * d, 1n);
    const nbytes = end - begin;
    if (nbytes !== numel * itemSize) {
      findings.append(err("st-size-mismatch", here + "/data_offsets", `${nbytes} bytes for ${numel} x ${itemSize}-byte elements`));
      continue;
    }
    if (itemSize > 1n && numel && (BigInt(dataStart) + begin) % itemSize) {
      findings.append(raw("st-unaligned-tensor", "advice", SAFETENSORS, here + "/data_offsets",
        `data at member offset ${BigInt(dataStart) + begin} is not ${itemSize}-byte aligned`));
    }
    entries.set(key, info);
  }

  spans.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : byCodePoint(a[2], b[2])));
  let reached = 0n;
  for (const [begin, end, key] of spans) {
    const where = pointer(key, "data_offsets");
    if (begin < reached) {
      findings.append(err("st-offsets-overlap", where, `[${begin}, ${end}] overlaps data before ${reached}`));
    } else if (begin > reached && allReadable) {
      findings.append(err("st-offsets-gap", where, `gap of ${begin - reached} bytes`));
    }
    if (end > reached) reached = end;
  }
  if (allReadable && reached < dataLen) {
    findings.append(err("st-data-length", "", `${dataLen - reached} bytes after the last tensor`));
  }
  return { entries, dataStart, findings: findings.finish() };
}

/** A JSON member's bytes; json-too-large without reading it when it exceeds the cap. */
async function jsonBytes(r: Reader, m: Member): Promise<Uint8Array> {
  if (m.size > MAX_JSON_BYTES) {
    throw new PtnError("json-too-large", `document of ${m.size} bytes exceeds ${MAX_JSON_BYTES}`, { member: m.name });
  }
  return r.bytes(m.dataOffset, m.size);
}

/** aliases.json against the safetensors keys (ptn.safetensors.aliases.read_aliases); null: they are
 * unknown (the header could not be read), so owners and shadowing are not checked. */
async function readAliases(
  r: Reader,
  m: Member,
  keys: ReadonlySet<string> | null,
): Promise<{ aliases: Map<string, string>; findings: RawFinding[] }> {
  const value = parseJson(await jsonBytes(r, m), { member: ALIASES });
  if (!(value instanceof Map)) {
    throw new PtnError("aliases-not-object", "aliases.json is not a JSON object", { member: ALIASES, pointer: "" });
  }
  const findings = new Budget();
  if (value.size === 0) findings.append(raw("aliases-empty", "warning", ALIASES, "", "empty aliases.json: omit the member"));
  const aliases = new Map<string, string>();
  for (const [alias, owner] of value) {
    let rule = "";
    let message = "";
    if (alias === "" || typeof owner !== "string") {
      [rule, message] = ["aliases-bad-entry", "an alias is a non-empty name mapped to a string"];
    } else if (alias === METADATA_KEY || owner === METADATA_KEY) {
      [rule, message] = ["aliases-reserved-key", "__metadata__ is reserved"];
    } else if (keys?.has(alias)) {
      [rule, message] = ["aliases-shadows-tensor", `${repr(alias)} is itself a tensor key`];
    } else if (keys !== null && !keys.has(owner)) {
      [rule, message] = ["aliases-missing-owner", `owner ${repr(owner)} is not a tensor key`];
    }
    if (!rule) aliases.set(alias, owner as string);
    else if (findings.room(rule, "error")) findings.append(raw(rule, "error", ALIASES, pointer(alias), message));
    else findings.skip(rule, "error");
  }
  return { aliases, findings: findings.finish() };
}

function alignmentOf(offset: number): number {
  let align = 1;
  while (align < 4096 && offset % (align * 2) === 0) align *= 2;
  return align;
}

interface Progress {
  done: number;
  total: number;
  report?: (done: number, total: number) => void;
}

/** The members whose CRC-32 the deep check reads, by offset: none starts inside another, and
 * none whose stored bytes are not its content (its fault is its one finding). */
function crcTargets(members: Member[]): Member[] {
  const targets: Member[] = [];
  let checkedTo = 0;
  for (const m of [...members].sort((a, b) => a.dataOffset - b.dataOffset || a.size - b.size)) {
    if (m.dataOffset < checkedTo) continue;
    checkedTo = m.dataOffset + m.size;
    if (m.fault === null) targets.push(m);
  }
  return targets;
}

async function crcFindings(r: Reader, targets: Member[], progress: Progress, crc32: Crc32): Promise<RawFinding[]> {
  const findings: RawFinding[] = [];
  for (const m of targets) {
    let crc = 0;
    const decoy = m.descriptor && m.method === 0 ? new DecoyScan() : null;
    for (let at = 0; at < m.size; at += CHUNK) {
      const length = Math.min(CHUNK, m.size - at);
      const chunk = await r.source.read(m.dataOffset + at, length);
      crc = crc32(chunk, crc);
      decoy?.feed(chunk);
      progress.done += length;
      progress.report?.(progress.done, progress.total);
    }
    if (crc !== m.crc32) {
      findings.push(raw("zip-crc-mismatch", "error", m.name, null,
        `the CRC-32 of the ${m.size} data bytes of member '${m.name}' is ${crc.toString(16).padStart(8, "0")} ` +
          `but the central directory records ${m.crc32.toString(16).padStart(8, "0")}: the data was altered ` +
          "or corrupted"));
    }
    decoy?.finish();
    if (decoy !== null && decoy.found !== null) {
      findings.push(raw("zip-descriptor-decoy", "error", m.name, null,
        `member '${m.name}' (flag bit 3) holds a data descriptor after ${decoy.found} of its ${m.size} data ` +
          "bytes, with those sizes: a reader that ends stored data at its descriptor stops there and reads " +
          "the rest as other members"));
    }
  }
  return findings;
}

async function boolFindings(
  r: Reader,
  m: Member,
  dataStart: number,
  entries: Map<string, TensorInfo>,
  progress: Progress,
): Promise<RawFinding[]> {
  const findings = new Budget();
  for (const [key, info] of entries) {
    const nbytes = Number(info.end - info.begin);
    if (info.dtype !== "BOOL" || nbytes === 0) continue;
    const base = m.dataOffset + dataStart + Number(info.begin);
    for (let at = 0; at < nbytes; at += CHUNK) {
      const length = Math.min(CHUNK, nbytes - at);
      const chunk = await r.source.read(base + at, length);
      progress.done += length;
      progress.report?.(progress.done, progress.total);
      const bad = chunk.findIndex((b) => b > 1);
      if (bad >= 0) {
        findings.append(raw("st-bool-not-0-or-1", "error", SAFETENSORS, pointer(key),
          `element ${at + bad} is the byte ${chunk[bad]}; a BOOL byte must be 0 or 1`));
        break;
      }
    }
  }
  return findings.finish();
}

/** A gap before a tensor leaves the tensor itself readable. */
const NOT_KEY_BREAKING = new Set(["st-offsets-gap"]);

/** Constant keys that an error of program.safetensors or aliases.json names, each with its
 * first such finding (ptn.package.validate.broken_keys): the first token of the pointer. */
function brokenKeys(findings: readonly RawFinding[]): Map<string, RawFinding> {
  const broken = new Map<string, RawFinding>();
  for (const f of findings) {
    if (
      f.severity === "error" &&
      (f.member === SAFETENSORS || f.member === ALIASES) &&
      f.pointer &&
      !NOT_KEY_BREAKING.has(f.rule)
    ) {
      const slash = f.pointer.indexOf("/", 1);
      const token = f.pointer.slice(1, slash < 0 ? undefined : slash);
      const key = token.replaceAll("~1", "/").replaceAll("~0", "~");
      if (!broken.has(key)) broken.set(key, f);
    }
  }
  return broken;
}

/** What the stages parsed, for the inspection drawn once the fast findings are known. */
interface Parsed {
  members: Map<string, Member> | null;
  /** Members present whose content could not be read, with the finding that says why. */
  unreadable: Map<string, RawFinding>;
  tensors: Map<string, TensorInfo> | null;
  aliases: Map<string, string>;
  /** How many findings the budget had admitted when the fast stages ended. */
  fastEnd: number;
}

/** A metadata.json value's kind as `ptn inspect` names it, whatever rule it breaks. */
function rawKind(value: JsonValue): string {
  const scalar = (v: JsonValue): string =>
    typeof v === "boolean"
      ? "bool"
      : typeof v === "bigint"
        ? "int"
        : typeof v === "number"
          ? "float"
          : typeof v === "string"
            ? "str"
            : "?";
  if (!Array.isArray(value)) return scalar(value);
  const kinds = new Set(value.map(scalar));
  if (value.length === 0) return "list";
  const [only] = kinds;
  return kinds.size === 1 && only !== "?" ? `${only}s` : "?";
}

/** A JSON document, or null when it does not parse. */
function rawJson(bytes: Uint8Array): JsonValue {
  try {
    return parseJson(bytes, { member: METADATA });
  } catch (err) {
    if (!(err instanceof PtnError)) throw err;
    return null;
  }
}

/** The rows of metadata.json as parsed, whatever rules its values break; null when it is not
 * a JSON object. */
function rawMetadataRows(bytes: Uint8Array, tables: PackageTables): MetadataRow[] | null {
  const value = rawJson(bytes);
  if (!(value instanceof Map)) return null;
  return metadataRows([...value.keys()], tables, (name) => {
    const v = value.get(name) as JsonValue;
    return [rawKind(v), v];
  });
}

/** metadata.json's rows: well-known names first (schema order), then the rest sorted. */
function metadataRows(names: string[], tables: PackageTables, row: (name: string) => [string, unknown]): MetadataRow[] {
  const present = new Set(names);
  const known = new Map(tables.wellKnown.map((w) => [w.name, w.description]));
  const ordered = [
    ...tables.wellKnown.filter((w) => present.has(w.name)).map((w) => w.name),
    ...names.filter((n) => !known.has(n)).sort(byCodePoint),
  ];
  return ordered.map((name): MetadataRow => {
    const [kind, value] = row(name);
    return { name, kind, value, meaning: known.get(name) ?? null };
  });
}

/** Input fed to the inflater at once. */
const INFLATE_CHUNK = 4 << 20;

/**
 * The content of deflated member `m`, for inspection only (validation never inflates): never
 * more than its declared size plus one piece, and null when it breaks that size, is corrupt,
 * or does not match its CRC-32 (ptn.Package.raw_metadata; ptn repack reports those faults).
 * One known difference: the host's inflater ignores bytes after the end of the stream,
 * which ptn refuses.
 */
async function inflated(r: Reader, m: Member): Promise<Uint8Array | null> {
  if (typeof DecompressionStream !== "function") return null;
  const stream = new DecompressionStream("deflate-raw");
  const writer = stream.writable.getWriter();
  const reader = stream.readable.getReader();
  let ioError: unknown = null;
  const feeding = (async () => {
    for (let at = 0; at < m.size; at += INFLATE_CHUNK) {
      await writer.ready;
      let piece: Uint8Array<ArrayBuffer>;
      try {
        // a copy: the stream takes only ArrayBuffer-backed bytes, a source may return others
        piece = new Uint8Array(await r.source.read(m.dataOffset + at, Math.min(INFLATE_CHUNK, m.size - at)));
      } catch (err) {
        ioError = err;
        await writer.abort(err); // the reader then fails instead of waiting for more input
        throw err;
      }
      await writer.write(piece);
    }
    await writer.close();
  })();
  feeding.catch(() => undefined); // a corrupt stream rejects both sides; the reader says so
  const pieces: Uint8Array[] = [];
  let produced = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || value === undefined) break;
      produced += value.length;
      if (produced > m.contentSize) {
        await reader.cancel();
        return null;
      }
      pieces.push(value);
    }
    await feeding;
  } catch {
    if (ioError !== null) throw ioError;
    return null; // a corrupt or cut stream: zip-bad-compressed-data for ptn repack
  }
  if (produced !== m.contentSize) return null;
  const out = new Uint8Array(produced);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return crc32(out) === m.crc32 ? out : null;
}

/** Rethrow what is no finding about the file's content (an I/O failure, a bug). */
function contentError(err: unknown): PtnError {
  if (!(err instanceof PtnError) || err.rule === "ptn-io-error") throw err;
  return err;
}

async function* stages(
  src: ByteSource,
  opts: ValidateOptions,
  tables: PackageTables,
  inspection: Inspection,
  parsed: Parsed,
  admitted: () => number,
  inspecting: boolean,
): AsyncGenerator<RawFinding> {
  const r = new Reader(src, await src.size());
  let members: Member[];
  let found: RawFinding[];
  try {
    ({ members, findings: found } = await readMembers(r));
  } catch (err) {
    yield fromError(contentError(err));
    parsed.fastEnd = admitted();
    return;
  }
  yield* found;
  yield* membershipFindings(members.map((m) => m.name));
  const byName = new Map<string, Member>();
  for (const m of members) byName.set(m.name, m);
  parsed.members = byName;
  inspection.members = [...byName.values()]
    .sort((a, b) => a.headerOffset - b.headerOffset)
    .map((m): MemberRow => ({
      name: m.name,
      header_offset: m.headerOffset,
      data_offset: m.dataOffset,
      size: m.size,
      data_alignment: alignmentOf(m.dataOffset),
      crc32: m.crc32.toString(16).padStart(8, "0"),
      method: m.method,
    }));
  // A member whose bytes are not its content (compressed, encrypted) has one finding
  // already; parsing those bytes would only add false ones.
  const unreadable = parsed.unreadable;
  for (const m of byName.values()) {
    if (m.fault === null) continue;
    unreadable.set(
      m.name,
      found.find((f) => f.member === m.name && f.rule === m.fault) ??
        raw(m.fault, "error", m.name, null, `member '${m.name}' cannot be read`),
    );
  }
  const readable = (name: string): Member | undefined => (unreadable.has(name) ? undefined : byName.get(name));
  const ptg = readable(PTG);
  let program: Decoded | null = null;
  let programFaults = false; // an error of program.ptg: its facts are not compared (spec 9.8)
  if (ptg !== undefined) {
    // The whole member, to verify its tables (only the envelope of one over the runtime's cap).
    const bytes = await r.bytes(ptg.dataOffset, readsTables(ptg.size) ? ptg.size : Math.min(8, ptg.size));
    inspection.program = { size: ptg.size, identifier: String.fromCharCode(...bytes.subarray(4, 8)) };
    const read = readProgram(bytes, tables.programLayout, ptg.size);
    program = read.program;
    if (inspecting && program !== null) inspection.methods = methodRows(program, tables.programLayout);
    programFaults = read.findings.some((f) => f.severity === "error");
    yield* read.findings;
    // The values each graph uses and defines, then each call node against the operator
    // table: the last steps of reading the program (ptn.program.read.read_program), before
    // the members that follow.
    if (program !== null) {
      const undefinedValues = undefinedFindings(program, tables.programLayout);
      programFaults ||= undefinedValues.some((f) => f.severity === "error");
      yield* undefinedValues;
      const graph = graphFindings(program, tables.programLayout, () => operatorTable(tables.operatorTable));
      programFaults ||= graph.some((f) => f.severity === "error");
      yield* graph;
    }
  }
  let tensors = new Map<string, TensorInfo>();
  let headerFindings: RawFinding[] = [];
  let dataStart = 0;
  const st = readable(SAFETENSORS);
  if (st !== undefined) {
    try {
      const header = await readHeader(r, st);
      tensors = header.entries;
      dataStart = header.dataStart;
      headerFindings = header.findings;
      parsed.tensors = tensors;
      yield* header.findings;
    } catch (err) {
      const finding = fromError(contentError(err), SAFETENSORS);
      unreadable.set(SAFETENSORS, finding);
      yield finding;
    }
  }
  const al = readable(ALIASES);
  let aliasFindings: RawFinding[] = [];
  if (al !== undefined) {
    // Owners can be checked only against a header that was read; an owner whose entry is
    // broken is still a key of it (its own finding says what is wrong).
    const keys = unreadable.has(SAFETENSORS)
      ? null
      : new Set([...tensors.keys(), ...brokenKeys(headerFindings).keys()]);
    try {
      const read = await readAliases(r, al, keys);
      parsed.aliases = read.aliases;
      aliasFindings = read.findings;
      yield* read.findings;
    } catch (err) {
      const finding = fromError(contentError(err), ALIASES);
      unreadable.set(ALIASES, finding);
      yield finding;
    }
  }
  if (program !== null) {
    const stored = {
      tensors: unreadable.has(SAFETENSORS) ? null : tensors,
      aliases: unreadable.has(ALIASES) ? null : parsed.aliases,
      broken: brokenKeys([...headerFindings, ...aliasFindings]),
    };
    const found = constantFindings(program, stored, tables.programLayout);
    programFaults ||= found.some((f) => f.severity === "error" && f.member === PTG);
    yield* found;
  }
  const meta = readable(METADATA);
  if (meta !== undefined) {
    let bytes: Uint8Array | undefined;
    try {
      bytes = await jsonBytes(r, meta);
      const md = tables.parseMetadata(bytes);
      inspection.metadata = metadataRows(md.names(), tables, (name) => [md.kind(name), md.value(name)]);
      for (const near of tables.nearWarnings(md.names())) yield fromError(near, METADATA, "warning");
      yield* agreement(program, programFaults, bytes, tables);
    } catch (err) {
      const error = contentError(err);
      const finding = fromError(error, METADATA);
      unreadable.set(METADATA, finding);
      yield finding;
      if (bytes !== undefined && /^(metadata|llm)-/.test(error.rule)) {
        for (const fault of tables.metadataFaults(bytes, error).slice(1)) {
          yield fromError(fault, METADATA, tables.severity[fault.rule] ?? "error");
        }
        yield* agreement(program, programFaults, bytes, tables);
      }
      // Values that break a rule are shown as parsed (ptn inspect: raw_metadata).
      if (inspecting && bytes !== undefined && /^(metadata|llm)-/.test(error.rule)) {
        inspection.metadata = rawMetadataRows(bytes, tables);
      }
    }
  } else if (inspecting && byName.has(METADATA)) {
    // A hand-zipped package's metadata.json: shown when it inflates within its declared size
    // and the JSON limit, and matches its CRC-32; it stays one zip-member-compressed finding.
    const m = byName.get(METADATA)!;
    const fault = unreadable.get(METADATA)?.rule;
    if (fault === "zip-member-compressed" && m.method === METHOD_DEFLATE && m.contentSize <= MAX_JSON_BYTES) {
      const bytes = await inflated(r, m);
      if (bytes !== null) inspection.metadata = rawMetadataRows(bytes, tables);
    }
  }
  parsed.fastEnd = admitted();
  if (opts.deep) {
    const progress: Progress = { done: 0, total: 0, report: opts.onProgress };
    const targets = crcTargets(members);
    for (const m of targets) progress.total += m.size;
    for (const info of tensors.values()) if (info.dtype === "BOOL") progress.total += Number(info.end - info.begin);
    progress.report?.(0, progress.total);
    yield* await crcFindings(r, targets, progress, opts.crc32 ?? crc32);
    if (tensors.size && st !== undefined) yield* await boolFindings(r, st, dataStart, tensors, progress);
  }
}

/** The metadata against the program (spec 9.8), when the program was read without error. */
function agreement(
  program: Decoded | null,
  programFaults: boolean,
  bytes: Uint8Array,
  tables: PackageTables,
): RawFinding[] {
  if (program === null || programFaults) return [];
  const inputs = tables.ruleInputs(bytes);
  if (inputs === null) return [];
  return agreementFindings(programFacts(program, tables.programLayout), inputs).map((f) =>
    raw(f.rule, f.severity, METADATA, f.pointer, f.message),
  );
}

/** The inspection's tensors, totals and unreadable parts, from what the fast stages parsed
 * and found (ptn.Package opened leniently, then `ptn inspect`'s describe). */
function drawParsed(info: Inspection, parsed: Parsed, fast: readonly RawFinding[]): void {
  const unreadable = new Map(parsed.unreadable);
  const firstError = fast.find((f) => f.severity === "error");
  if (firstError !== undefined && (parsed.members === null || parsed.members.size === 0)) {
    if (!unreadable.has(PTG)) unreadable.set(PTG, firstError); // no member: nothing is readable
  }
  const broken = brokenKeys(fast);
  for (const [alias, owner] of parsed.aliases) {
    const finding = broken.get(owner);
    if (finding !== undefined) broken.set(alias, finding);
  }
  const row = (f: RawFinding) => ({
    rule: f.rule,
    severity: f.severity,
    member: f.member,
    pointer: f.pointer,
    message: f.message,
  });
  info.unreadable = [
    ...[...unreadable]
      // metadata.json that parsed is shown as parsed; its findings say what is wrong
      .filter(([name]) => name !== METADATA || info.metadata === null)
      .map(([name, f]): UnreadablePart => ({ part: name, ...row(f) })),
    ...[...broken.keys()]
      .sort(byCodePoint)
      .map((key): UnreadablePart => ({ part: `constant ${key}`, key, ...row(broken.get(key)!) })),
  ];
  const tensors = parsed.tensors;
  if (tensors === null) return;
  const aliases = parsed.aliases;
  const keys = [...tensors.keys(), ...[...aliases].filter(([, owner]) => tensors.has(owner)).map(([a]) => a)]
    .filter((k) => !broken.has(k) && !broken.has(aliases.get(k) ?? k))
    .sort(byCodePoint);
  const rows: TensorRow[] = [];
  for (const key of keys) {
    const owner = aliases.get(key);
    const t = tensors.get(owner ?? key)!;
    rows.push({ key, dtype: t.dtype, shape: t.shape.map(Number), bytes: Number(t.end - t.begin), alias_of: owner ?? null });
  }
  info.tensors = rows;
  info.totals = {
    constants: rows.length,
    constant_bytes: rows.filter((t) => t.alias_of === null).reduce((a, t) => a + t.bytes, 0),
    dedup_saved_bytes: rows.filter((t) => t.alias_of !== null).reduce((a, t) => a + t.bytes, 0),
  };
}

/** Validate one package and describe it; never throws for the file's content. */
export async function checkPackage(
  src: ByteSource,
  opts: ValidateOptions,
  tables: PackageTables,
  inspecting: boolean,
): Promise<{ report: FileReport; info: Inspection }> {
  const info: Inspection = {
    path: src.name,
    valid: false,
    members: null,
    program: null,
    methods: null,
    tensors: null,
    metadata: null,
    totals: null,
    unreadable: [],
    findings: [],
  };
  const parsed: Parsed = { members: null, unreadable: new Map(), tensors: null, aliases: new Map(), fastEnd: -1 };
  const findings: RawFinding[] = [];
  const budget = new Budget();
  try {
    for await (const f of stages(src, opts, tables, info, parsed, () => findings.length, inspecting)) {
      if (budget.admit(f)) findings.push(f);
    }
    findings.push(...budget.summaries());
  } catch (err) {
    findings.push(...budget.summaries());
    if (err instanceof PtnError) {
      findings.push(fromError(err));
    } else {
      findings.push(raw("ptn-internal-error", "error", null, null,
        `the validator failed while checking this file (${String(err)}); this is a bug in the ptn ` +
          "TypeScript binding, not a verdict on the file: please report it"));
    }
  }
  drawParsed(info, parsed, parsed.fastEnd < 0 ? findings : findings.slice(0, parsed.fastEnd));
  const out: Finding[] = findings.map((f) => {
    // Every finding's rule and severity must be those of a rule heading of spec.md (the
    // generated table): anything else is a bug of the binding, reported as one.
    if (tables.severity[f.rule] !== f.severity) {
      return {
        rule: "ptn-internal-error",
        severity: "error",
        member: f.member,
        pointer: f.pointer,
        message: `the validator made a finding of ${f.rule} (${f.severity}), which spec.md does not define`,
      };
    }
    return { rule: f.rule, severity: f.severity, member: f.member, pointer: f.pointer, message: f.message };
  });
  const valid = !out.some((f) => f.severity === "error");
  info.valid = valid;
  info.findings = out;
  return { report: { path: src.name, valid, findings: out }, info };
}

/** validatePackage and inspectPackage for the tables of one schema (the generated package.ts). */
export function packageFunctions(tables: PackageTables): {
  validatePackage(src: ByteSource, opts?: ValidateOptions): Promise<FileReport>;
  inspectPackage(src: ByteSource, opts?: ValidateOptions): Promise<{ report: FileReport; info: Inspection }>;
} {
  return {
    validatePackage: async (src, opts = {}) => (await checkPackage(src, opts, tables, false)).report,
    inspectPackage: (src, opts = {}) => checkPackage(src, opts, tables, true),
  };
}
