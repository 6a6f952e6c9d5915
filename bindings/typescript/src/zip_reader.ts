// The strict zip reader of the package validator, over a ByteSource: the same stages,
// rules, order and messages as the Python reference (ptn/zip/*.py).
//
// Every byte that a stage reads is read through a Reader (small reads share 4 KiB
// blocks), so the fast check costs the end records, the central directory and the local
// headers, never the members' data. Offsets and sizes read from the file are checked
// against the file's length before they are used; 64-bit fields are bigint until then (so
// values beyond 2^53 compare and print exactly), positions inside the file are numbers.

import type { ByteSource } from "./byte_source.js";
import type { Severity } from "./package_api.js";
import { PtnError } from "./strict_json.js";

export const MAX_MEMBERS = 1 << 20;
export const ALIGNMENT = 64;
const EOCD_SEARCH = 22 + 0xffff;
const U16_MAX = 0xffff;
const U32_MAX = 0xffffffff;
const ZIP64_EXTRA_ID = 0x0001;
const UNICODE_EXTRA_IDS = [0x7075, 0x6375];
const SIG_LFH = 0x04034b50;
const SIG_CDH = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_LOC64 = 0x07064b50;
const SIG_EOCD64 = 0x06064b50;
const SIG_DD = 0x08074b50;
const FLAG_ENCRYPTED = 0x0001;
const FLAG_DESCRIPTOR = 0x0008;
const FLAG_PATCHED = 0x0020;
const FLAG_STRONG_ENCRYPTION = 0x0040;
const FLAG_UTF8 = 0x0800;
const FLAG_MASKED_HEADERS = 0x2000;
const FLAGS_WITH_A_RULE =
  FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_PATCHED | FLAG_STRONG_ENCRYPTION | FLAG_UTF8 | FLAG_MASKED_HEADERS;
const FLAGS_ENCRYPTION = FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS;
const FLAGS_COMPARED = FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_STRONG_ENCRYPTION | FLAG_UTF8;
const VERSION_ZIP64 = 45;
const METHOD_NAMES: ReadonlyMap<number, string> = new Map([
  [8, "deflate"], [9, "deflate64"], [12, "bzip2"], [14, "lzma"], [93, "zstd"], [95, "xz"], [99, "AES"],
]);
const ZIP64_FIELDS = ["uncompressed size", "compressed size", "local header offset"];

/** A finding before the budget: `more` > 0 marks a summary standing for that many. */
export interface RawFinding {
  rule: string;
  severity: Severity;
  member: string | null;
  pointer: string | null;
  message: string;
  more: number;
}

/** One readable member (ptn.zip.Member). */
export interface Member {
  name: string;
  headerOffset: number;
  dataOffset: number;
  /** Bytes stored in the file (the compressed size of a compressed member). */
  size: number;
  crc32: number;
  /** The compression method of its directory entry (0: stored). */
  method: number;
  /** How many bytes the content has: `size`, or the declared uncompressed size of a
   * compressed member. */
  contentSize: number;
  /** The rule (already reported) that makes the stored bytes something else than the content
   * (zip-member-compressed, zip-member-encrypted), else null: content checks skip such a
   * member, so one cause gives one finding, not a cascade over compressed bytes. */
  fault: string | null;
  /** Flag bit 3: a data descriptor follows the data (zip-data-descriptor). */
  descriptor: boolean;
}

const BLOCK = 4096;
const MAX_BLOCKS = 1024;

/** Reads through a ByteSource; small reads share cached 4 KiB blocks. */
export class Reader {
  readonly #blocks = new Map<number, Uint8Array>();
  constructor(
    readonly source: ByteSource,
    readonly size: number,
  ) {}

  /** Exactly `length` bytes at `offset`; the range must lie inside the file. */
  async bytes(offset: number, length: number): Promise<Uint8Array> {
    if (length === 0) return new Uint8Array(0);
    if (length > BLOCK) return this.source.read(offset, length);
    const first = Math.floor(offset / BLOCK);
    const last = Math.floor((offset + length - 1) / BLOCK);
    if (first === last) {
      const block = await this.#block(first);
      return block.subarray(offset - first * BLOCK, offset - first * BLOCK + length);
    }
    const out = new Uint8Array(length);
    for (let b = first; b <= last; b++) {
      const block = await this.#block(b);
      const from = Math.max(offset, b * BLOCK);
      const to = Math.min(offset + length, b * BLOCK + block.length);
      out.set(block.subarray(from - b * BLOCK, to - b * BLOCK), from - offset);
    }
    return out;
  }

  async #block(index: number): Promise<Uint8Array> {
    let block = this.#blocks.get(index);
    if (block === undefined) {
      const start = index * BLOCK;
      block = await this.source.read(start, Math.min(BLOCK, this.size - start));
      if (this.#blocks.size >= MAX_BLOCKS) this.#blocks.clear();
      this.#blocks.set(index, block);
    }
    return block;
  }

  /** Whether the 4-byte little-endian signature `sig` is at `offset`, inside the file. */
  async sigAt(offset: number, sig: number): Promise<boolean> {
    if (!(offset >= 0 && offset + 4 <= this.size)) return false;
    return u32(await this.bytes(offset, 4), 0) === sig;
  }
}

export function u16(b: Uint8Array, at: number): number {
  return (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8);
}

export function u32(b: Uint8Array, at: number): number {
  return (u16(b, at) + u16(b, at + 2) * 0x10000) >>> 0;
}

/** A little-endian uint64, exactly. */
export function u64n(b: Uint8Array, at: number): bigint {
  return BigInt(u32(b, at)) + (BigInt(u32(b, at + 4)) << 32n);
}

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, "0");
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** `raw` as Python's bytes.decode("utf-8", "backslashreplace") shows it. */
export function backslashReplace(raw: Uint8Array): string {
  try {
    return UTF8.decode(raw);
  } catch {
    let out = "";
    let i = 0;
    while (i < raw.length) {
      let done = false;
      for (let len = Math.min(4, raw.length - i); len >= 1; len--) {
        try {
          out += UTF8.decode(raw.subarray(i, i + len));
          i += len;
          done = true;
          break;
        } catch {
          // try a shorter sequence
        }
      }
      if (!done) {
        out += "\\x" + hex(raw[i] ?? 0, 2);
        i += 1;
      }
    }
    return out;
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Where every stage of one zip read reports (ptn.zip.sink.Sink): each rule capped at 100. */
class Sink {
  readonly findings: RawFinding[] = [];
  readonly #counts = new Map<string, { rule: string; severity: Severity; n: number }>();

  add(rule: string, member: string | null, message: string, severity: Severity = "error"): void {
    const key = `${rule}\u0000${severity}`;
    const entry = this.#counts.get(key) ?? { rule, severity, n: 0 };
    entry.n += 1;
    this.#counts.set(key, entry);
    if (entry.n <= 100) this.findings.push({ rule, severity, member, pointer: null, message, more: 0 });
  }

  finish(): RawFinding[] {
    const more: RawFinding[] = [];
    for (const { rule, severity, n } of this.#counts.values()) {
      if (n > 100) {
        more.push({
          rule,
          severity,
          member: null,
          pointer: null,
          message: `${n - 100} more findings of this rule are not listed`,
          more: n - 100,
        });
      }
    }
    return [...this.findings, ...more];
  }
}

interface EndRecords {
  counted: number;
  cdStart: number;
  cdEnd: number;
  shift: number;
}

/** Stage 1 (ptn/zip/ends.py): the end records and where the central directory is. Sizes and
 * offsets are bigint here (a zip64 record holds 64-bit ones) until they are known to lie
 * inside the file. */
async function locateDirectory(r: Reader, sink: Sink): Promise<EndRecords> {
  const n = r.size;
  const p = await findEocd(r);
  const e = await r.bytes(p, 22);
  const disk = u16(e, 4);
  const diskCd = u16(e, 6);
  const nDisk = u16(e, 8);
  const nTotal = u16(e, 10);
  let cdSize = BigInt(u32(e, 12));
  let cdOffset = BigInt(u32(e, 16));
  const commentLen = u16(e, 20);
  checkTail(n, p, commentLen, sink);
  const zip64 = await readZip64(r, p, [disk, diskCd, nDisk, nTotal, u32(e, 12), u32(e, 16)], sink);
  let records: bigint;
  let count: bigint;
  let zShift: bigint;
  if (zip64 === null) {
    if (disk !== 0 || diskCd !== 0 || nDisk !== nTotal) {
      throw new PtnError(
        "zip-not-a-zip",
        `the end record describes an archive split over disks (disk ${disk}, directory on disk ${diskCd}); ` +
          "a .ptn is a single-file archive",
      );
    }
    [records, count, zShift] = [BigInt(p), BigInt(nTotal), 0n];
  } else {
    [records, count, cdSize, cdOffset, zShift] = zip64;
    if ((disk !== 0 && disk !== U16_MAX) || (diskCd !== 0 && diskCd !== U16_MAX)) {
      throw new PtnError(
        "zip-not-a-zip",
        "the end record describes an archive split over disks; a .ptn is a single-file archive",
      );
    }
  }
  if (count > BigInt(MAX_MEMBERS)) {
    throw new PtnError(
      "zip-too-many-members",
      `the end record counts ${count} members; at most ${MAX_MEMBERS} are allowed`,
    );
  }
  let shift = 0n;
  if (cdOffset + cdSize === records) {
    // where the end record says
  } else if (
    cdSize <= records &&
    cdOffset < records - cdSize &&
    (cdSize === 0n || (await r.sigAt(Number(records - cdSize), SIG_CDH)))
  ) {
    shift = records - cdSize - cdOffset;
    sink.add(
      "zip-data-before-archive",
      null,
      `the central directory is ${shift} bytes after the offset ${cdOffset} the end record gives: ` +
        `${shift} bytes were prepended to the archive (a stub or a concatenated file); a .ptn starts ` +
        "with its first local header",
    );
  } else if (
    cdOffset + cdSize < records &&
    (cdSize === 0n || (await r.sigAt(Number(cdOffset), SIG_CDH)))
  ) {
    const gap = records - cdOffset - cdSize;
    sink.add(
      "zip-unreferenced-data",
      null,
      `${gap} bytes between the end of the central directory (offset ${cdOffset + cdSize}) and the end ` +
        "records belong to no record",
    );
  } else if (cdOffset + cdSize > BigInt(n)) {
    throw new PtnError(
      "zip-truncated",
      `the central directory (offset ${cdOffset}, ${cdSize} bytes) runs past the end of the ${n}-byte ` +
        "file: the file was cut short",
    );
  } else {
    throw new PtnError(
      "zip-not-a-zip",
      `the central directory (offset ${cdOffset}, ${cdSize} bytes) does not end where the end records ` +
        `begin (offset ${records}); the directory cannot be read`,
    );
  }
  if (zip64 !== null && zShift !== shift) {
    sink.add(
      "zip-bad-zip64",
      null,
      `the zip64 locator's offset is off by ${zShift} bytes but the directory offset by ${shift}; both ` +
        "must point at the real records",
    );
  }
  // Every branch that gets here keeps the directory inside [0, records]: numbers are exact.
  const cdStart = Number(cdOffset + shift);
  return { counted: Number(count), cdStart, cdEnd: cdStart + Number(cdSize), shift: Number(shift) };
}

async function findEocd(r: Reader): Promise<number> {
  const n = r.size;
  if (n >= 22) {
    const last = await r.bytes(n - 22, 22);
    if (u32(last, 0) === SIG_EOCD && u16(last, 20) === 0) return n - 22;
  }
  const start = Math.max(0, n - EOCD_SEARCH);
  const tail = await r.bytes(start, n - start);
  let fallback = -1;
  for (let i = tail.length - 4; i >= 0; i--) {
    if (tail[i] !== 0x50 || u32(tail, i) !== SIG_EOCD) continue;
    const p = start + i;
    if (p + 22 > n) continue;
    if (p + 22 + u16(tail, i + 20) === n) return p;
    if (fallback < 0) fallback = p;
  }
  if (fallback >= 0) return fallback;
  if (await r.sigAt(0, SIG_LFH)) {
    throw new PtnError(
      "zip-truncated",
      `the ${n}-byte file starts like a zip archive but has no end-of-central-directory record: it was ` +
        "cut short; copy or download it again",
    );
  }
  if (n >= 8 && String.fromCharCode(...(await r.bytes(4, 4))) === "ET12") {
    // An ExecuTorch .pte (a FlatBuffer, identifier ET12): the usual wrong file to hand in.
    throw new PtnError(
      "zip-not-a-zip",
      "this is an ExecuTorch program (a .pte file: identifier ET12 " +
        "at bytes 4..8), not a .ptn package, which is a zip archive holding pro" +
        "gram.ptg; write a .ptn from the export with ptn.executorch.save(programs, 'model.ptn')",
    );
  }
  throw new PtnError(
    "zip-not-a-zip",
    `no end-of-central-directory record in the last ${Math.min(n, EOCD_SEARCH)} bytes: this file is not ` +
      "a zip archive, and a .ptn is one",
  );
}

function checkTail(n: number, p: number, commentLen: number, sink: Sink): void {
  const after = n - (p + 22);
  if (commentLen > after) {
    sink.add(
      "zip-truncated",
      null,
      `the end record declares a ${commentLen}-byte comment but only ${after} bytes follow it: the file ` +
        "was cut short",
    );
  } else if (commentLen && commentLen === after) {
    sink.add(
      "zip-trailing-data",
      null,
      `the end record carries a ${commentLen}-byte archive comment; a .ptn ends with its end record and ` +
        "has an empty comment",
    );
  } else if (after) {
    sink.add(
      "zip-trailing-data",
      null,
      `${after} bytes follow the end-of-central-directory record at offset ${p}; nothing may follow it ` +
        "(was something appended to the file?)",
    );
  }
}

async function readZip64(
  r: Reader,
  p: number,
  eocd: number[],
  sink: Sink,
): Promise<[bigint, bigint, bigint, bigint, bigint] | null> {
  const loc = p - 20;
  if (!(await r.sigAt(loc, SIG_LOC64))) return null;
  const l = await r.bytes(loc, 20);
  const zDisk = u32(l, 4);
  const zOff = u64n(l, 8);
  const disks = u32(l, 16);
  if (zDisk !== 0 || disks > 1) {
    throw new PtnError(
      "zip-not-a-zip",
      `the zip64 locator describes an archive split over ${disks} disks; a .ptn is a single-file archive`,
    );
  }
  const saturated = eocd[3] === U16_MAX || eocd[4] === U32_MAX || eocd[5] === U32_MAX;
  let rec = -1;
  if (zOff + 56n <= BigInt(loc) && (await r.sigAt(Number(zOff), SIG_EOCD64))) rec = Number(zOff);
  else if (loc >= 56 && (await r.sigAt(loc - 56, SIG_EOCD64))) rec = loc - 56;
  if (rec < 0) {
    const message =
      `a zip64 locator precedes the end record but no zip64 end record is at offset ${zOff} ` +
      "(or just before the locator)";
    if (saturated) throw new PtnError("zip-bad-zip64", message + "; the directory cannot be located");
    sink.add("zip-bad-zip64", null, message + "; using the 32-bit end record");
    return null;
  }
  const z = await r.bytes(rec, 56);
  const rest = u64n(z, 4);
  const disk = u32(z, 16);
  const diskCd = u32(z, 20);
  const nDisk = u64n(z, 24);
  const nTotal = u64n(z, 32);
  const cdSize = u64n(z, 40);
  const cdOffset = u64n(z, 48);
  if (rest < 44n || BigInt(rec + 12) + rest !== BigInt(loc)) {
    sink.add(
      "zip-bad-zip64",
      null,
      `the zip64 end record at offset ${rec} declares ${rest} more bytes, but ${loc - rec - 12} lie ` +
        "between its size field and the locator",
    );
  } else if (rest !== 44n) {
    sink.add(
      "zip-bad-zip64",
      null,
      `the zip64 end record at offset ${rec} carries ${rest - 44n} bytes of extensible data after its 44 ` +
        "bytes of fields; a .ptn has none",
    );
  }
  if (disk !== 0 || diskCd !== 0 || nDisk !== nTotal) {
    throw new PtnError(
      "zip-not-a-zip",
      "the zip64 end record describes an archive split over several disks; a .ptn is a single-file archive",
    );
  }
  const checks: [string, number, number, bigint][] = [
    ["entry count", eocd[3] ?? 0, U16_MAX, nTotal],
    ["directory size", eocd[4] ?? 0, U32_MAX, cdSize],
    ["directory offset", eocd[5] ?? 0, U32_MAX, cdOffset],
  ];
  for (const [what, short, sat, full] of checks) {
    if (short !== sat && BigInt(short) !== full) {
      sink.add(
        "zip-bad-zip64",
        null,
        `the end record gives ${what} ${short} but the zip64 end record gives ${full}; the 32-bit field ` +
          `must equal it or be 0x${sat.toString(16).toUpperCase()}`,
      );
    }
  }
  return [BigInt(rec), nTotal, cdSize, cdOffset, BigInt(rec) - zOff];
}

// ---- zip64 extra fields (ptn/zip/zip64.py) ----

interface Zip64 {
  malformed: boolean;
  saturated: string[];
  payload: number | null;
  real: bigint[] | null;
}

const NOTHING: Zip64 = { malformed: false, saturated: [], payload: null, real: [] };

function zip64Payload(b: Uint8Array, start: number, end: number): Uint8Array | false | null {
  let found: Uint8Array | null = null;
  let pos = start;
  while (pos + 4 <= end) {
    const tag = u16(b, pos);
    const length = u16(b, pos + 2);
    const at = pos + 4;
    pos = pos + 4 + length;
    if (pos > end) return false;
    if (tag === ZIP64_EXTRA_ID) {
      if (found !== null) return false;
      found = b.subarray(at, pos);
    }
  }
  return pos === end ? found : false;
}

function unicodeExtra(b: Uint8Array, start: number, end: number): number | null {
  let pos = start;
  while (pos + 4 <= end) {
    const tag = u16(b, pos);
    if (UNICODE_EXTRA_IDS.includes(tag)) return tag;
    pos += 4 + u16(b, pos + 2);
  }
  return null;
}

function resolveZip64(b: Uint8Array, start: number, end: number, values: number[]): Zip64 {
  let saturated: string[] = [];
  if (values.includes(U32_MAX)) {
    saturated = ZIP64_FIELDS.slice(0, values.length).filter((_, i) => values[i] === U32_MAX);
  } else if (start === end) {
    return NOTHING;
  }
  const z = zip64Payload(b, start, end);
  if (z === false) return { malformed: true, saturated, payload: null, real: null };
  if (z === null && saturated.length === 0) return NOTHING;
  const payload = z === null ? null : z.length;
  if (z === null || z.length < 8 * saturated.length) return { malformed: false, saturated, payload, real: null };
  return { malformed: false, saturated, payload, real: saturated.map((_, i) => u64n(z, 8 * i)) };
}

/** The header's values with the saturated ones replaced (exact: 64-bit values are bigint);
 * null when some value is saturated and its real value is missing. */
function resolveValues(z: Zip64, values: number[]): bigint[] | null {
  if (z.saturated.length && z.real === null) return null;
  let i = 0;
  return values.map((v) => (v === U32_MAX ? (z.real?.[i++] ?? BigInt(v)) : BigInt(v)));
}

// ---- stage 2: the central directory (ptn/zip/central.py) ----

interface CentralEntry {
  number: number;
  name: string | null;
  label: string;
  rawName: Uint8Array;
  flags: number;
  method: number;
  crc32: number;
  csize: bigint;
  usize: bigint;
  /** Position in the file (the shift applied); may lie far outside it. */
  headerOffset: bigint;
}

/** The directory is read in pieces as the walk reaches them, doubling from this size up to
 * DIRECTORY_PIECE_MAX: the walk stops at the first entry that breaks (and reads no entry's
 * comment), so an end record claiming a gigabyte of directory costs the entries before the
 * break, never the claim. */
const DIRECTORY_PIECE = 8 << 10;
const DIRECTORY_PIECE_MAX = 1 << 20;

/** A window on the directory: bytes holding [at, at + length) (directory offsets). */
class DirectoryWindow {
  #bytes: Uint8Array = new Uint8Array(0);
  #base = 0;
  #piece = DIRECTORY_PIECE;
  constructor(
    readonly r: Reader,
    readonly start: number,
    readonly size: number,
  ) {}

  async get(at: number, length: number): Promise<{ bytes: Uint8Array; base: number }> {
    if (at < this.#base || at + length > this.#base + this.#bytes.length) {
      const size = Math.min(this.size - at, Math.max(length, this.#piece));
      this.#bytes = await this.r.bytes(this.start + at, size);
      this.#base = at;
      this.#piece = Math.min(2 * this.#piece, DIRECTORY_PIECE_MAX);
    }
    return { bytes: this.#bytes, base: this.#base };
  }
}

async function readDirectory(
  r: Reader,
  ends: EndRecords,
  sink: Sink,
): Promise<{ entries: CentralEntry[]; complete: boolean }> {
  const { counted: count, cdStart, cdEnd } = ends;
  const end = cdEnd - cdStart;
  const window = new DirectoryWindow(r, cdStart, end);
  const entries: CentralEntry[] = [];
  let complete = true;
  let pos = 0;
  for (let i = 0; i < count; i++) {
    if (pos + 46 > end) {
      sink.add(
        "zip-not-a-zip",
        null,
        `the central directory ends after ${i} of the ${count} entries the end record counts`,
      );
      return { entries, complete: false };
    }
    let { bytes, base } = await window.get(pos, 46);
    if (u32(bytes, pos - base) !== SIG_CDH) {
      sink.add(
        "zip-not-a-zip",
        null,
        `central directory entry ${i} at offset ${cdStart + pos} does not start with a central-header ` +
          "signature; the directory is corrupt",
      );
      return { entries, complete: false };
    }
    const nameLen = u16(bytes, pos - base + 28);
    const extraLen = u16(bytes, pos - base + 30);
    const commentLen = u16(bytes, pos - base + 32);
    const extraAt = pos + 46 + nameLen;
    const nextPos = extraAt + extraLen + commentLen;
    if (nextPos > end) {
      sink.add(
        "zip-not-a-zip",
        null,
        `central directory entry ${i} at offset ${cdStart + pos} runs past the end of the directory ` +
          `(offset ${cdEnd})`,
      );
      return { entries, complete: false };
    }
    ({ bytes, base } = await window.get(pos, 46 + nameLen + extraLen));
    const entry = centralEntry(i, bytes, pos - base, extraAt - base, extraAt - base + extraLen, ends.shift, sink);
    if (entry === null) complete = false;
    else entries.push(entry);
    pos = nextPos;
  }
  if (pos !== end) {
    sink.add(
      "zip-not-a-zip",
      null,
      `${end - pos} bytes follow the ${count} entries the end record counts in the central directory: ` +
        "the count is wrong or entries are hidden",
    );
  }
  return { entries, complete };
}

function centralEntry(
  i: number,
  cd: Uint8Array,
  pos: number,
  extraAt: number,
  extraEnd: number,
  shift: number,
  sink: Sink,
): CentralEntry | null {
  const needed = u16(cd, pos + 6);
  const flags = u16(cd, pos + 8);
  const method = u16(cd, pos + 10);
  const crc = u32(cd, pos + 16);
  let csize = BigInt(u32(cd, pos + 20));
  let usize = BigInt(u32(cd, pos + 24));
  const disk = u16(cd, pos + 34);
  let offset = BigInt(u32(cd, pos + 42));
  const raw = cd.slice(pos + 46, extraAt);
  const [name, label] = memberName(i, raw, sink);
  checkFields(name, label, needed, flags, method, sink);
  if (disk !== 0) {
    sink.add(
      "zip-not-a-zip",
      name,
      `member ${label} starts on disk ${disk}; a .ptn is a single-file archive, so every disk number is 0`,
    );
  }
  if (extraAt !== extraEnd) {
    const tag = unicodeExtra(cd, extraAt, extraEnd);
    if (tag !== null) reportUnicodeExtra(name, label, "central", tag, sink);
  }
  const stored = [u32(cd, pos + 24), u32(cd, pos + 20), u32(cd, pos + 42)];
  const z = resolveZip64(cd, extraAt, extraEnd, stored);
  if (z.malformed) {
    sink.add(
      "zip-bad-zip64",
      name,
      `the central extra fields of member ${label} are malformed (a field runs past the block, or zip64 ` +
        "appears twice), so zip64 values cannot be found",
    );
    if (z.saturated.length) return null;
  } else if (z.saturated.length || z.payload !== null) {
    const need = 8 * z.saturated.length + (disk === U16_MAX ? 4 : 0);
    if (z.payload === null) {
      sink.add(
        "zip-bad-zip64",
        name,
        `member ${label} has ${z.saturated.join(", ")} 0xFFFFFFFF but no zip64 extra field giving the ` +
          "real value",
      );
    } else {
      if (z.payload !== need) {
        sink.add(
          "zip-bad-zip64",
          name,
          `the zip64 extra field of member ${label} is ${z.payload} bytes; its saturated fields ` +
            `(${z.saturated.join(", ") || "none"}) need exactly ${need}`,
        );
      }
      const resolved = resolveValues(z, stored);
      if (resolved === null) return null;
      [usize, csize, offset] = resolved as [bigint, bigint, bigint];
    }
  }
  if (method === 0 && csize !== usize) {
    sink.add(
      "zip-size-mismatch",
      name,
      `stored member ${label} has compressed size ${csize} but uncompressed size ${usize}; for a STORED ` +
        "member both are the data length",
    );
  }
  return {
    number: i,
    name,
    label,
    rawName: raw,
    flags,
    method,
    crc32: crc,
    csize,
    usize,
    headerOffset: offset + BigInt(shift),
  };
}

function memberName(i: number, raw: Uint8Array, sink: Sink): [string | null, string] {
  let name: string;
  try {
    name = UTF8.decode(raw);
  } catch {
    const label = `entry ${i} '${backslashReplace(raw)}'`;
    sink.add("zip-bad-member-name", null, `the name of ${label} is not valid UTF-8; member names are UTF-8`);
    return [null, label];
  }
  if (name.includes("\u0000") || !name) {
    sink.add(
      "zip-bad-member-name",
      name,
      `central directory entry ${i} has ` +
        (name ? "a name containing a NUL character" : "an empty name") +
        "; member names are non-empty and NUL-free",
    );
  }
  return [name, `'${name}'`];
}

function checkFields(
  name: string | null,
  label: string,
  needed: number,
  flags: number,
  method: number,
  sink: Sink,
): void {
  if (flags & FLAGS_ENCRYPTION) {
    sink.add(
      "zip-member-encrypted",
      name,
      `member ${label} is encrypted (flags 0x${hex(flags, 4)}); .ptn members are stored in clear`,
    );
  }
  if ((needed & 0xff) > VERSION_ZIP64) {
    sink.add(
      "zip-unsupported-version",
      name,
      `member ${label} needs zip version ${((needed & 0xff) / 10).toFixed(1)} to extract; stored members ` +
        "with zip64 need at most 4.5, and readers refuse higher versions (Python's zipfile above 6.3)",
    );
  }
  if (method !== 0) {
    const known = METHOD_NAMES.get(method);
    sink.add(
      "zip-member-compressed",
      name,
      `member ${label} uses compression method ${known ? `${method} (${known})` : method}; .ptn members ` +
        "are STORED (method 0) so they can be mapped without copying (`ptn repack` stores a deflated " +
        "package's members)",
    );
  } else if (flags & FLAG_PATCHED) {
    sink.add(
      "zip-member-compressed",
      name,
      `member ${label} sets flag bit 5 (compressed patched data); .ptn members are plain STORED data`,
    );
  }
  if (flags & FLAG_DESCRIPTOR) {
    sink.add(
      "zip-data-descriptor",
      name,
      `member ${label} sets flag bit 3 (a data descriptor follows the data); .ptn writers know every size ` +
        "before the data, and a descriptor lets a reader walking local headers find the data's end " +
        "elsewhere than the directory says",
    );
  }
  if (flags & ~FLAGS_WITH_A_RULE) reportFlags(name, label, "central", flags & ~FLAGS_WITH_A_RULE, sink);
}

function reportUnicodeExtra(name: string | null, label: string, where: string, tag: number, sink: Sink): void {
  sink.add(
    "zip-unicode-path-extra",
    name,
    `the ${where} header of member ${label} carries an Info-ZIP Unicode ` +
      `${tag === 0x7075 ? "Path" : "Comment"} extra field (0x${hex(tag, 4)}); readers that honour it see ` +
      "another name than those that do not, so .ptn headers carry none",
  );
}

function reportFlags(name: string | null, label: string, where: string, bits: number, sink: Sink): void {
  sink.add(
    "zip-bad-flags",
    name,
    `the ${where} header of member ${label} sets general-purpose flag bits 0x${hex(bits, 4)}; a .ptn ` +
      "member may set only bit 11 (UTF-8 name)",
  );
}

// ---- stage 4: local headers (ptn/zip/local.py) ----

interface LocalHeader {
  flags: number;
  method: number;
  crc32: number;
  usize: bigint;
  csize: bigint;
  rawName: Uint8Array;
  dataOffset: number;
  zip64: Zip64;
  unicode: number | null;
}

type LocalProblem = "outside" | "no-signature" | "overruns";

interface Placed {
  entry: CentralEntry;
  /** Where its local header is (inside the file, so a number). */
  start: number;
  dataOffset: number;
  end: number;
}

async function readLocalHeader(r: Reader, at: bigint, areaEnd: number): Promise<LocalHeader | LocalProblem> {
  if (at + 30n > BigInt(areaEnd)) return "outside";
  const offset = Number(at);
  const h = await r.bytes(offset, 30);
  if (u32(h, 0) !== SIG_LFH) return "no-signature";
  const flags = u16(h, 6);
  const method = u16(h, 8);
  const crc = u32(h, 14);
  let csize = BigInt(u32(h, 18));
  let usize = BigInt(u32(h, 22));
  const nameLen = u16(h, 26);
  const extraLen = u16(h, 28);
  const data = offset + 30 + nameLen + extraLen;
  if (data > areaEnd) return "overruns";
  const tail = await r.bytes(offset + 30, nameLen + extraLen);
  const stored = [u32(h, 22), u32(h, 18)];
  const z = resolveZip64(tail, nameLen, nameLen + extraLen, stored);
  if (z.saturated.length) {
    const resolved = resolveValues(z, stored);
    if (resolved !== null) [usize, csize] = resolved as [bigint, bigint];
  }
  const unicode = extraLen ? unicodeExtra(tail, nameLen, nameLen + extraLen) : null;
  return {
    flags,
    method,
    crc32: crc,
    usize,
    csize,
    rawName: tail.slice(0, nameLen),
    dataOffset: data,
    zip64: z,
    unicode,
  };
}

async function checkLocalHeader(
  r: Reader,
  e: CentralEntry,
  areaEnd: number,
  sink: Sink,
  headers: Map<bigint, LocalHeader | LocalProblem>,
): Promise<Placed | null> {
  const { name: member, label, headerOffset: h } = e;
  let local = headers.get(h);
  if (local === undefined) {
    local = await readLocalHeader(r, h, areaEnd);
    headers.set(h, local);
  }
  if (typeof local === "string") {
    reportUnusable(local, e, areaEnd, sink);
    return null;
  }
  const mismatches: string[] = [];
  if (!equalBytes(local.rawName, e.rawName)) mismatches.push(`name '${backslashReplace(local.rawName)}'`);
  if ((local.flags ^ e.flags) & FLAGS_COMPARED) {
    mismatches.push(`flags 0x${hex(local.flags, 4)} (central 0x${hex(e.flags, 4)})`);
  }
  if (local.method !== e.method) mismatches.push(`method ${local.method} (central ${e.method})`);
  const z = local.zip64;
  if (z.malformed) {
    sink.add(
      "zip-bad-zip64",
      member,
      `the local extra fields of member ${label} are malformed (a field runs past the block, or zip64 ` +
        "appears twice)",
    );
  } else if (z.saturated.length && z.real === null) {
    sink.add(
      "zip-bad-zip64",
      member,
      `the local header of member ${label} has 32-bit sizes 0xFFFFFFFF but no zip64 extra field large ` +
        "enough to give the real sizes",
    );
  } else if (z.payload !== null && z.payload !== 8 * z.saturated.length) {
    sink.add(
      "zip-bad-zip64",
      member,
      `the local zip64 extra field of member ${label} is ${z.payload} bytes; its saturated sizes ` +
        `(${z.saturated.join(", ") || "none"}) need exactly ${8 * z.saturated.length}`,
    );
  }
  const localOnly = local.flags & ~e.flags & ~FLAGS_COMPARED;
  if (localOnly) reportFlags(member, label, "local", localOnly, sink);
  if (local.unicode !== null) reportUnicodeExtra(member, label, "local", local.unicode, sink);
  const descriptor = Boolean(e.flags & FLAG_DESCRIPTOR) && Boolean(local.flags & FLAG_DESCRIPTOR);
  const pairs: [string, number | bigint, number | bigint][] = [
    ["CRC-32", local.crc32, e.crc32],
    ["compressed size", local.csize, e.csize],
    ["uncompressed size", local.usize, e.usize],
  ];
  for (const [what, value, central] of pairs) {
    if (value !== central && !(descriptor && BigInt(value) === 0n)) mismatches.push(`${what} ${value} (central ${central})`);
  }
  if (mismatches.length) {
    sink.add(
      "zip-header-mismatch",
      member,
      `the local header of member ${label} at offset ${h} disagrees with the central directory: ` +
        mismatches.join("; "),
    );
  }
  const data = local.dataOffset;
  if (BigInt(data) + e.csize > BigInt(areaEnd)) {
    sink.add(
      "zip-member-out-of-bounds",
      member,
      `member ${label}: data [${data}, ${BigInt(data) + e.csize}) runs past the start of the central directory at offset ${areaEnd}`,
    );
    return null;
  }
  let end = data + Number(e.csize);
  if (descriptor) end = await descriptorEnd(r, e, end, areaEnd, sink);
  return { entry: e, start: Number(h), dataOffset: data, end };
}

function reportUnusable(problem: LocalProblem, e: CentralEntry, areaEnd: number, sink: Sink): void {
  const { headerOffset: h, label } = e;
  if (problem === "outside") {
    sink.add(
      "zip-member-out-of-bounds",
      e.name,
      `member ${label}: local header offset ${h} is not inside the member area [0, ${areaEnd}) before the ` +
        "central directory",
    );
  } else if (problem === "no-signature") {
    sink.add(
      "zip-header-mismatch",
      e.name,
      `member ${label}: the central directory points at offset ${h}, where there is no local header`,
    );
  } else {
    sink.add(
      "zip-member-out-of-bounds",
      e.name,
      `member ${label}: the local header at offset ${h} (with name and extra fields) runs into the central ` +
        `directory at offset ${areaEnd}`,
    );
  }
}

async function descriptorEnd(
  r: Reader,
  e: CentralEntry,
  dataEnd: number,
  areaEnd: number,
  sink: Sink,
): Promise<number> {
  for (const size of [16, 24, 12, 20]) {
    const withSig = size === 16 || size === 24;
    if (dataEnd + size > areaEnd) continue;
    const at = dataEnd + (withSig ? 4 : 0);
    if (withSig && !(await r.sigAt(dataEnd, SIG_DD))) continue;
    const b = await r.bytes(at, size - (withSig ? 4 : 0));
    const wide = size === 20 || size === 24;
    const sizes = wide ? [u64n(b, 4), u64n(b, 12)] : [BigInt(u32(b, 4)), BigInt(u32(b, 8))];
    if (u32(b, 0) === e.crc32 && sizes[0] === e.csize && sizes[1] === e.usize) return dataEnd + size;
  }
  sink.add(
    "zip-header-mismatch",
    e.name,
    `member ${e.label} announces a data descriptor (flag bit 3) but none after its data at offset ` +
      `${dataEnd} repeats the central CRC-32 ${hex(e.crc32, 8)} and size ${e.csize}`,
  );
  return dataEnd;
}

// ---- stage 5: layout (ptn/zip/layout.py) ----

function checkLayout(placed: Placed[], complete: boolean, ends: EndRecords, sink: Sink): void {
  const spans = [...placed].sort(
    (a, b) => a.start - b.start || a.end - b.end,
  );
  let cursor = ends.shift;
  let owner: Placed | null = null;
  for (const p of spans) {
    const e = p.entry;
    const start = p.start;
    if (owner !== null && start < cursor) {
      const o = owner.entry;
      sink.add(
        "zip-overlapping-entries",
        e.name,
        `member ${e.label} [${start}, ${p.end}) overlaps member ${o.label} [${owner.start}, ${owner.end}); ` +
          "every member owns its bytes",
      );
    } else if (start > cursor && complete) {
      gap(cursor, start, owner, `the local header of member ${e.label}`, ends.shift, sink);
    }
    if (p.end > cursor) {
      cursor = p.end;
      owner = p;
    }
  }
  if (cursor < ends.cdStart && complete) gap(cursor, ends.cdStart, owner, "the central directory", ends.shift, sink);
}

function gap(begin: number, end: number, owner: Placed | null, what: string, shift: number, sink: Sink): void {
  if (owner === null && shift === 0) {
    sink.add(
      "zip-data-before-archive",
      null,
      `${end} bytes precede ${what} at offset ${end} and belong to no member; a .ptn starts with its first ` +
        "local header at offset 0",
    );
  } else {
    const after = owner ? `the end of member ${owner.entry.label}` : "the prepended bytes";
    sink.add(
      "zip-unreferenced-data",
      null,
      `${end - begin} bytes between ${after} (offset ${begin}) and ${what} (offset ${end}) belong to no ` +
        "member; hidden bytes can carry a decoy local header",
    );
  }
}

/**
 * Read and cross-check the zip directory (ptn.zip.read_members): the members whose data
 * range is sound, in directory order, and every finding. Throws PtnError only when no
 * directory can be read at all (or the source fails: ptn-io-error).
 */
export async function readMembers(r: Reader): Promise<{ members: Member[]; findings: RawFinding[] }> {
  const sink = new Sink();
  const ends = await locateDirectory(r, sink);
  const directory = await readDirectory(r, ends, sink);
  const placed: Placed[] = [];
  const first = new Map<string, number>();
  const headers = new Map<bigint, LocalHeader | LocalProblem>();
  for (const e of directory.entries) {
    const placement = await checkLocalHeader(r, e, ends.cdStart, sink, headers);
    if (placement !== null) placed.push(placement);
    if (e.name === null) continue;
    const seen = first.get(e.name);
    if (seen !== undefined) {
      sink.add(
        "zip-duplicate-member",
        e.name,
        `member ${e.label} appears again as central directory entry ${e.number} (first as entry ${seen}); ` +
          "readers disagree on which one they return, so names must be unique",
      );
    } else {
      first.set(e.name, e.number);
    }
  }
  const complete = directory.complete && placed.length === directory.entries.length;
  checkLayout(placed, complete, ends, sink);
  const members: Member[] = [];
  for (const p of placed) {
    const e = p.entry;
    if (e.name === null) continue;
    if (p.dataOffset % ALIGNMENT) {
      sink.add(
        "zip-unaligned-member",
        e.name,
        `the data of member ${e.label} starts at offset ${p.dataOffset}, ${p.dataOffset % ALIGNMENT} past a ` +
          `multiple of ${ALIGNMENT}; aligned data can be viewed without copying by every consumer ` +
          "(`ptn repack` aligns it, keeping every byte of content)",
        "advice",
      );
    }
    members.push({
      name: e.name,
      headerOffset: p.start,
      dataOffset: p.dataOffset,
      size: Number(e.csize),
      crc32: e.crc32,
      method: e.method,
      contentSize: Number(e.method === 0 ? e.csize : e.usize),
      fault: faultOf(e),
      descriptor: (e.flags & FLAG_DESCRIPTOR) !== 0,
    });
  }
  return { members, findings: sink.finish() };
}

/** The rule (already reported) that makes `e`'s stored bytes other than its content. */
function faultOf(e: CentralEntry): string | null {
  if (e.flags & FLAGS_ENCRYPTION) return "zip-member-encrypted";
  if (e.method !== 0 || e.flags & FLAG_PATCHED) return "zip-member-compressed";
  return null;
}

// ---- CRC-32 (IEEE 802.3, reflected 0xEDB88320), slicing by 16 ----
// The portable CRC-32 (a browser has no other): 16 bytes a step, read as four aligned int32
// words. Tables and state are int32 (Int32Array, no `>>> 0` inside the loop): V8 keeps
// int32 values unboxed, while uint32 values past 2^31 become heap doubles, about ten times
// slower. Word reads give the bytes in the order slicing needs on a little-endian host only;
// elsewhere every byte goes through the one-byte table.

const CRC_TABLES: Int32Array[] = (() => {
  const tables = Array.from({ length: 16 }, () => new Int32Array(256));
  const t0 = tables[0] as Int32Array;
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t0[i] = c;
  }
  for (let i = 0; i < 256; i++) {
    for (let t = 1; t < 16; t++) {
      const prev = (tables[t - 1] as Int32Array)[i] as number;
      (tables[t] as Int32Array)[i] = (t0[prev & 0xff] as number) ^ (prev >>> 8);
    }
  }
  return tables;
})();
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A CRC-32 function: of `data`, continuing from `crc` (0 to start), as zlib.crc32. */
export type Crc32 = (data: Uint8Array, crc: number) => number;

/** CRC-32 of `data` continuing from `crc` (0 to start), as zlib.crc32. */
export function crc32(data: Uint8Array, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15] = CRC_TABLES as [
    Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array,
    Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array,
  ];
  let c = ~crc | 0;
  let i = 0;
  const n = data.length;
  if (LITTLE_ENDIAN && n >= 20) {
    const head = (4 - (data.byteOffset % 4)) % 4;
    while (i < head) c = t0[(c ^ data[i++]!) & 0xff]! ^ (c >>> 8);
    const words = new Int32Array(data.buffer, data.byteOffset + i, (n - i) >> 2);
    const steps = words.length - (words.length % 4);
    for (let w = 0; w < steps; w += 4) {
      const a = c ^ words[w]!;
      const b = words[w + 1]!;
      const d = words[w + 2]!;
      const e = words[w + 3]!;
      c =
        t15[a & 0xff]! ^ t14[(a >>> 8) & 0xff]! ^ t13[(a >>> 16) & 0xff]! ^ t12[a >>> 24]! ^
        t11[b & 0xff]! ^ t10[(b >>> 8) & 0xff]! ^ t9[(b >>> 16) & 0xff]! ^ t8[b >>> 24]! ^
        t7[d & 0xff]! ^ t6[(d >>> 8) & 0xff]! ^ t5[(d >>> 16) & 0xff]! ^ t4[d >>> 24]! ^
        t3[e & 0xff]! ^ t2[(e >>> 8) & 0xff]! ^ t1[(e >>> 16) & 0xff]! ^ t0[e >>> 24]!;
    }
    i += steps * 4;
  }
  while (i < n) c = t0[(c ^ data[i++]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * A data descriptor hidden in a stored member's data (ptn.zip.decoy): the signature, then
 * a CRC-32 and two sizes (4 or 8 bytes each) equal to the data bytes before it. A reader
 * that streams the archive ends the member there and reads the rest as other members.
 * Fed the data in order, in pieces of any size; `found` is the first such offset.
 */
export class DecoyScan {
  #carry: Uint8Array = new Uint8Array(0);
  #base = 0;
  found: number | null = null;

  feed(piece: Uint8Array, last = false): void {
    if (this.found !== null) return;
    const data = new Uint8Array(this.#carry.length + piece.length);
    data.set(this.#carry, 0);
    data.set(piece, this.#carry.length);
    let at = indexOfSig(data, 0);
    while (at >= 0) {
      const k = this.#base + at;
      if (at + 16 <= data.length && u32(data, at + 8) === k && u32(data, at + 12) === k) {
        this.found = k;
        return;
      }
      if (at + 24 > data.length && !last) break; // its 64-bit form needs the next piece
      if (at + 24 <= data.length && u64n(data, at + 8) === BigInt(k) && u64n(data, at + 16) === BigInt(k)) {
        this.found = k;
        return;
      }
      at = indexOfSig(data, at + 1);
    }
    const keep = at < 0 ? Math.min(data.length, 23) : data.length - at;
    this.#base += data.length - keep;
    this.#carry = data.slice(data.length - keep);
  }

  finish(): void {
    this.feed(new Uint8Array(0), true);
  }
}

function indexOfSig(data: Uint8Array, from: number): number {
  for (let i = data.indexOf(0x50, from); i >= 0 && i + 4 <= data.length; i = data.indexOf(0x50, i + 1)) {
    if (data[i + 1] === 0x4b && data[i + 2] === 0x07 && data[i + 3] === 0x08) return i;
  }
  return -1;
}
