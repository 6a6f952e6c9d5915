// program.ptg (spec chapter 4; ptn.program.read and ptn.program.verify): the envelope, then
// the version, then the whole FlatBuffer verified and decoded in one walk driven by the
// program layout (schema/program.layout.json, rendered into program_layout.ts), then the
// rules about the methods. The same checks, in the same order, with the same messages as
// the Python reference; hostile bytes never throw, every fault is a finding.

import { Budget, raw } from "./budget.js";
import { bytesRepr, repr } from "./pyrepr.js";
import { pointer } from "./strict_json.js";
import type { RawFinding } from "./zip_reader.js";

export const PTG = "program.ptg";
const PTG_MAX_BYTES = 2 ** 30;

/** One field of a table (ptn.program.layout.Field). */
export interface LayoutField {
  readonly name: string;
  readonly slot: number;
  /** A scalar type (bool, byte, ubyte, int, long, double), string, table, vector or union. */
  readonly kind: string;
  readonly items?: string;
  readonly table?: string;
  readonly union?: string;
  readonly typeSlot?: number;
  readonly enum?: string;
  readonly default?: number | bigint | boolean;
  readonly required?: boolean;
  readonly writeEmpty?: boolean;
}

/** The program layout, as the generated program_layout.ts gives it. */
export interface ProgramLayout {
  readonly identifier: string;
  readonly root: string;
  readonly versions: readonly string[];
  readonly maxDepth: number;
  readonly bytesPerObject: number;
  /** Scalar type -> bytes. */
  readonly scalars: Readonly<Record<string, number>>;
  readonly enums: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Union -> member tables; the type byte of members[i] is i + 1. */
  readonly unions: Readonly<Record<string, readonly string[]>>;
  /** [ScalarType code, safetensors dtype name]. */
  readonly safetensorsDtype: readonly (readonly [number, string])[];
  readonly tables: Readonly<Record<string, readonly LayoutField[]>>;
}

/** A decoded table: each field of the layout by name (absent vectors empty, absent scalars
 * their defaults, absent strings "", absent tables null). Scalars of type long are bigint. */
export type Decoded = Record<string, unknown>;

/** A decoded union: its member table's name and fields, or, for a type byte ptn does not
 * know, `member` null and `value` null. A union holding nothing (type 0) decodes to null. */
export interface UnionValue {
  readonly member: string | null;
  readonly typeCode: number;
  readonly value: Decoded | null;
}

/** The envelope of program.ptg: size, identifier, root offset (ptn.program.envelope). */
export function ptgFindings(size: number, head: Uint8Array): RawFinding[] {
  if (size < 8) {
    return [raw("ptg-too-short", "error", PTG, null, `program.ptg has ${size} bytes; a FlatBuffer needs at least 8`)];
  }
  const findings: RawFinding[] = [];
  const ident = String.fromCharCode(...head.subarray(4, 8));
  if (ident !== "NPTG") {
    findings.push(raw("ptg-bad-identifier", "error", PTG, null,
      `file identifier is ${bytesRepr(head.subarray(4, 8))}, expected b'NPTG'`));
  }
  const root = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(0, true);
  if (!(root >= 8 && root < size)) {
    findings.push(raw("ptg-bad-root-offset", "error", PTG, null, `root table offset ${root} is outside the member [8, ${size})`));
  }
  if (size > PTG_MAX_BYTES) {
    findings.push(raw("ptg-too-large", "warning", PTG, null,
      `program.ptg has ${size} bytes; the proposed ExecuTorch C++ loader refuses programs over ${PTG_MAX_BYTES}`));
  }
  return findings;
}

/** True when the tables of a program of `size` bytes are read (the runtime's cap). */
export function readsTables(size: number): boolean {
  return size <= PTG_MAX_BYTES;
}

class Refusal extends Error {
  constructor(
    readonly rule: string,
    readonly where: string,
    message: string,
  ) {
    super(message);
  }
}

/** (decoded, objects in the expanded subtree, table levels in the subtree). */
type Result = [unknown, number, number];

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** One walk of one buffer (ptn.program.verify.Verifier). */
export class Verifier {
  readonly #view: DataView;
  readonly #size: number;
  readonly #limit: number;
  readonly #memo = new Map<string, Result>();
  readonly #path: (string | number)[] = [];
  /** Objects verified: each distinct (offset, type) once. */
  visited = 0;
  /** Offsets followed, shared ones each time. */
  reached = 0;
  #expanded = 0;
  #decoded = 0;

  constructor(
    readonly buf: Uint8Array,
    readonly layout: ProgramLayout,
  ) {
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.#size = buf.length;
    this.#limit = Math.floor(this.#size / layout.bytesPerObject);
  }

  refuse(message: string, more: (string | number)[] = [], rule = "ptg-malformed"): never {
    throw new Refusal(rule, pointer(...this.#path, ...more), message);
  }

  #count(n: number): void {
    this.#expanded += n;
    if (this.#expanded > this.#limit) {
      this.refuse(
        `more than ${this.#limit} objects are reached, counting each once per offset that reaches it ` +
          `(at most one per ${this.layout.bytesPerObject} bytes): shared offsets multiply the work of ` +
          "walking this program",
      );
    }
  }

  #bytes(pos: number, n: number): void {
    this.#decoded += n;
    if (this.#decoded > this.#size) {
      this.refuse(
        `the strings and vectors decoded up to byte ${pos} take more than the buffer's ${this.#size} bytes: ` +
          "they overlap",
      );
    }
  }

  #depth(depth: number, height: number): void {
    if (depth + height - 1 > this.layout.maxDepth) this.refuse(`tables nest deeper than ${this.layout.maxDepth} levels`);
  }

  #u16(at: number): number {
    return this.#view.getUint16(at, true);
  }

  #u32(at: number): number {
    return this.#view.getUint32(at, true);
  }

  #fields(table: string): readonly LayoutField[] {
    return this.layout.tables[table] ?? [];
  }

  /** The decoded root table (the envelope has checked the root offset). */
  root(): Decoded {
    return this.table(this.#u32(0), this.layout.root, 1)[0] as Decoded;
  }

  /** One string field of the root table, verified on its own (null when absent). */
  rootString(name: string): string | null {
    const table = this.layout.root;
    const pos = this.#u32(0);
    const [vt, nslots, tsize] = this.#tableStart(pos, table);
    const f = this.#fields(table).find((x) => x.name === name && x.kind === "string");
    if (f === undefined) return null;
    const off = f.slot < nslots ? this.#u16(vt + 4 + 2 * f.slot) : 0;
    if (off === 0) return null;
    const at = this.#fieldAt(pos, table, f, off, tsize, 4);
    this.#path.push(f.name);
    const value = this.string(this.#follow(at))[0] as string;
    this.#path.pop();
    this.#memo.clear();
    this.#expanded = 0;
    this.#decoded = 0;
    return value;
  }

  #tableStart(pos: number, name: string): [number, number, number] {
    const size = this.#size;
    if (pos & 3) this.refuse(`${name} table at byte ${pos} is not 4-byte aligned`);
    if (pos + 4 > size) this.refuse(`${name} table at byte ${pos} runs past the end of the ${size}-byte buffer`);
    const vt = pos - this.#view.getInt32(pos, true);
    if (vt < 0 || vt + 4 > size) this.refuse(`${name} table at byte ${pos} has its vtable at ${vt}, outside the buffer`);
    if (vt & 1) this.refuse(`${name} table at byte ${pos} has its vtable at ${vt}, not 2-byte aligned`);
    const vsize = this.#u16(vt);
    const tsize = this.#u16(vt + 2);
    if (vsize < 4 || vsize & 1 || vt + vsize > size) {
      this.refuse(
        `the vtable of the ${name} table at byte ${pos} has size ${vsize}: not an even number of at least 4 ` +
          "bytes inside the buffer",
      );
    }
    if (tsize < 4 || pos + tsize > size) {
      this.refuse(`${name} table at byte ${pos} declares ${tsize} inline bytes: fewer than 4, or past the end of the buffer`);
    }
    return [vt, (vsize - 4) >> 1, tsize];
  }

  #fieldAt(pos: number, table: string, f: LayoutField, off: number, tsize: number, n: number): number {
    if (off < 4 || off + n > tsize) {
      this.refuse(
        `field ${table}.${f.name} at offset ${off} of the table at byte ${pos} does not fit in its ${tsize} inline bytes`,
        [f.name],
      );
    }
    const at = pos + off;
    if (at % n) this.refuse(`field ${table}.${f.name} at byte ${at} is not ${n}-byte aligned`, [f.name]);
    return at;
  }

  #follow(at: number): number {
    const rel = this.#u32(at);
    if (rel === 0) this.refuse(`the offset at byte ${at} is 0`);
    return at + rel;
  }

  #scalar(kind: string, at: number): unknown {
    const v = this.#view;
    switch (kind) {
      case "bool":
        return v.getUint8(at) !== 0;
      case "byte":
        return v.getInt8(at);
      case "ubyte":
        return v.getUint8(at);
      case "int":
        return v.getInt32(at, true);
      case "long":
        return v.getBigInt64(at, true);
      default:
        return v.getFloat64(at, true);
    }
  }

  #default(f: LayoutField): unknown {
    if (f.default !== undefined) return f.default;
    if (f.kind === "bool") return false;
    return f.kind === "long" ? 0n : 0;
  }

  table(pos: number, name: string, depth: number): Result {
    this.reached += 1;
    const key = `${pos}|${name}`;
    const hit = this.#memo.get(key);
    if (hit !== undefined) {
      this.#depth(depth, hit[2]);
      this.#count(hit[1]);
      return hit;
    }
    this.#depth(depth, 1);
    this.visited += 1;
    this.#count(1);
    const [vt, nslots, tsize] = this.#tableStart(pos, name);
    const values: Decoded = {};
    let weight = 1;
    let height = 1;
    for (const f of this.#fields(name)) {
      const kind = f.kind;
      const slotOff = (slot: number) => (slot < nslots ? this.#u16(vt + 4 + 2 * slot) : 0);
      if (kind in this.layout.scalars) {
        const off = slotOff(f.slot);
        values[f.name] = off === 0 ? this.#default(f) : this.#scalar(kind, this.#fieldAt(pos, name, f, off, tsize, this.layout.scalars[kind] ?? 1));
        continue;
      }
      let result: Result;
      if (kind === "union") {
        result = this.#union(pos, name, f, slotOff, tsize, depth);
      } else {
        const off = slotOff(f.slot);
        if (off === 0) {
          if (f.required) this.refuse(`${name}.${f.name} is required but absent`, [], "ptg-missing-field");
          values[f.name] = kind === "string" ? "" : kind === "vector" ? [] : null;
          continue;
        }
        const target = this.#follow(this.#fieldAt(pos, name, f, off, tsize, 4));
        this.#path.push(f.name);
        if (kind === "string") result = this.string(target);
        else if (kind === "table") result = this.table(target, f.table ?? "", depth + 1);
        else result = this.vector(target, f, depth);
        this.#path.pop();
      }
      values[f.name] = result[0];
      weight += result[1];
      if (result[2] >= height) height = result[2] + 1;
    }
    const out: Result = [values, weight, height];
    this.#memo.set(key, out);
    return out;
  }

  #union(pos: number, name: string, f: LayoutField, slotOff: (slot: number) => number, tsize: number, depth: number): Result {
    const typeOff = slotOff(f.typeSlot ?? 0);
    const code = typeOff ? this.#view.getUint8(this.#fieldAt(pos, name, f, typeOff, tsize, 1)) : 0;
    if (code === 0) return [null, 0, 0];
    const members = this.layout.unions[f.union ?? ""] ?? [];
    const member = members[code - 1];
    if (member === undefined) return [{ member: null, typeCode: code, value: null } satisfies UnionValue, 0, 0];
    const off = slotOff(f.slot);
    if (off === 0) this.refuse(`${name}.${f.name} says ${member} but holds no value`, [], "ptg-missing-field");
    const target = this.#follow(this.#fieldAt(pos, name, f, off, tsize, 4));
    this.#path.push(f.name);
    const [value, w, h] = this.table(target, member, depth + 1);
    this.#path.pop();
    return [{ member, typeCode: code, value: value as Decoded } satisfies UnionValue, w, h];
  }

  string(pos: number): Result {
    this.reached += 1;
    const key = `${pos}|`;
    const hit = this.#memo.get(key);
    if (hit !== undefined) {
      this.#count(1);
      return hit;
    }
    this.visited += 1;
    this.#count(1);
    const size = this.#size;
    if (pos & 3) this.refuse(`string at byte ${pos} is not 4-byte aligned`);
    if (pos + 4 > size) this.refuse(`string at byte ${pos} runs past the end of the ${size}-byte buffer`);
    const n = this.#u32(pos);
    const end = pos + 4 + n;
    if (end >= size) this.refuse(`string at byte ${pos} of ${n} bytes runs past the end of the buffer`);
    if (this.buf[end] !== 0) this.refuse(`string at byte ${pos} is not NUL-terminated`);
    this.#bytes(pos, n + 5);
    let text: string;
    try {
      text = UTF8.decode(this.buf.subarray(pos + 4, end));
    } catch {
      this.refuse(`string at byte ${pos} is not UTF-8`);
    }
    const out: Result = [text, 1, 0];
    this.#memo.set(key, out);
    return out;
  }

  vector(pos: number, f: LayoutField, depth: number): Result {
    this.reached += 1;
    const items = f.items ?? "";
    const key = `${pos}|[${f.table ?? items}]`;
    const hit = this.#memo.get(key);
    if (hit !== undefined) {
      this.#depth(depth + 1, hit[2]);
      this.#count(hit[1]);
      return hit;
    }
    this.visited += 1;
    this.#count(1);
    const size = this.#size;
    if (pos & 3) this.refuse(`vector at byte ${pos} is not 4-byte aligned`);
    if (pos + 4 > size) this.refuse(`vector at byte ${pos} runs past the end of the ${size}-byte buffer`);
    const n = this.#u32(pos);
    const start = pos + 4;
    const width = this.layout.scalars[items] ?? 4;
    if (n > Math.floor((size - start) / width)) {
      this.refuse(`vector at byte ${pos} of ${n} ${width}-byte items runs past the end of the ${size}-byte buffer`);
    }
    if (width === 8 && n && start & 7) this.refuse(`vector at byte ${pos}: its 8-byte items are not 8-byte aligned`);
    this.#bytes(pos, 4 + n * width);
    let out: Result;
    if (items in this.layout.scalars) {
      const values: unknown[] = new Array(n);
      for (let i = 0; i < n; i++) values[i] = this.#scalar(items, start + width * i);
      out = [values, 1, 0];
    } else {
      const values: unknown[] = new Array(n);
      let weight = 1;
      let height = 0;
      for (let i = 0; i < n; i++) {
        this.#path.push(i);
        const target = this.#follow(start + 4 * i);
        const [obj, w, h] = f.table === undefined ? this.string(target) : this.table(target, f.table, depth + 1);
        this.#path.pop();
        values[i] = obj;
        weight += w;
        if (h > height) height = h;
      }
      out = [values, weight, height];
    }
    this.#memo.set(key, out);
    return out;
  }
}

/** The program in `data` (null when it cannot be read) and every finding about it
 * (ptn.program.read.read_program). A member of `size` bytes over the runtime's cap is
 * given by its first 8 bytes only: its tables are not read. */
export function readProgram(
  data: Uint8Array,
  layout: ProgramLayout,
  size = data.length,
): { program: Decoded | null; findings: RawFinding[] } {
  const findings = ptgFindings(size, data.subarray(0, 8));
  if (findings.some((f) => f.severity === "error") || !readsTables(size)) return { program: null, findings };
  const verifier = new Verifier(data, layout);
  let program: Decoded;
  try {
    const version = verifier.rootString("version");
    if (version === null || !layout.versions.includes(version)) {
      const shown = version === null ? "absent" : repr(version);
      findings.push(raw("ptg-unknown-version", "warning", PTG, "/version",
        `program version ${shown} is not one ptn knows (${layout.versions.join(", ")}); its tables are not read, ` +
          "and the checks that need them are skipped"));
      return { program: null, findings };
    }
    program = verifier.root();
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    findings.push(raw(err.rule, "error", PTG, err.where, err.message));
    return { program: null, findings };
  }
  findings.push(...methodFindings(program));
  return { program, findings };
}

/** ptg-no-methods, ptg-empty-method-name, ptg-duplicate-method-name. */
function methodFindings(program: Decoded): RawFinding[] {
  const methods = program["methods"] as Decoded[];
  if (methods.length === 0) return [raw("ptg-no-methods", "error", PTG, "/methods", "the program has no methods")];
  const out = new Budget();
  const first = new Map<string, number>();
  methods.forEach((method, i) => {
    const name = method["name"] as string;
    const where = pointer("methods", i, "name");
    if (name === "") {
      out.append(raw("ptg-empty-method-name", "error", PTG, where, `method ${i} has no name`));
    } else if (first.has(name)) {
      out.append(raw("ptg-duplicate-method-name", "error", PTG, where,
        `method ${i} is named ${repr(name)}, as method ${first.get(name)} is`));
    } else {
      first.set(name, i);
    }
  });
  return out.finish();
}
