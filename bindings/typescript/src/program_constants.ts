// The constants a package stores against the ones its program binds (spec section 4.3;
// ptn.program.constants): binding by binding in program order, then the unused keys.
// Keys and names come from the file: every lookup by them goes through a Map or Set.

import { Budget, raw } from "./budget.js";
import { PTG, type Decoded, type ProgramLayout, type UnionValue } from "./program.js";
import { repr } from "./pyrepr.js";
import { pointer } from "./strict_json.js";
import type { RawFinding } from "./zip_reader.js";

const NO_DATA = "has no data in program.safetensors or aliases.json";

/** A readable entry of program.safetensors, as the header check keeps it. */
export interface StoredEntry {
  readonly key: string;
  readonly dtype: string;
  readonly shape: readonly bigint[];
  readonly begin: bigint;
  readonly end: bigint;
}

/** What the package stores: null for a member that could not be read (an absent one is
 * empty); `broken` keys (an entry, alias entry or owner that breaks a rule) are left out. */
export interface Stored {
  readonly tensors: ReadonlyMap<string, StoredEntry> | null;
  readonly aliases: ReadonlyMap<string, string> | null;
  readonly broken: ReadonlySet<string> | ReadonlyMap<string, unknown>;
}

type Tokens = (string | number)[];

interface Dim {
  min: bigint;
  max: bigint;
}

interface Meta {
  dtype: number;
  sizes: Dim[];
  dim_order: number[];
  quant: Decoded | null;
}

interface AffineGroup {
  scale_data_key: string;
  scale_dtype: number;
  quant_min: number;
  quant_max: number;
  group_size: number;
  zero_point_data_key: string;
  zero_point_dtype: number;
}

/** The scheme of a TensorMeta's QuantSpec: null when none. */
function scheme(meta: Meta): UnionValue | null {
  return meta.quant === null ? null : (meta.quant["scheme"] as UnionValue | null);
}

function affine(meta: Meta): AffineGroup | null {
  const s = scheme(meta);
  return s !== null && s.member === "AffineGroup" ? (s.value as unknown as AffineGroup) : null;
}

function dimText(d: Dim): string {
  if (d.min === d.max) return `${d.min}`;
  return d.max >= 0n ? `${d.min}..${d.max}` : `${d.min}..`;
}

function order(meta: Meta): number[] {
  return meta.dim_order.length ? meta.dim_order : meta.sizes.map((_, i) => i);
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n === b > 0n ? q + 1n : q;
}

function bits(q: AffineGroup): bigint | null {
  if (q.quant_max < q.quant_min) return null;
  return BigInt((q.quant_max - q.quant_min).toString(2).replace(/^0$/, "").length);
}

function quantKeys(meta: Meta): [string, string][] {
  const q = affine(meta);
  if (q === null) return [];
  const keys: [string, string][] = [["scale_data_key", q.scale_data_key]];
  if (q.zero_point_data_key) keys.push(["zero_point_data_key", q.zero_point_data_key]);
  return keys;
}

/** Every tensor value of a graph and of its subgraphs, depth first: (tokens of the meta,
 * name, meta). A name listed twice keeps its first entry, as the decoded model's dict does. */
function* tensorValues(graph: Decoded, base: Tokens): Generator<[Tokens, string, Meta]> {
  const taken = new Set<string>();
  const values = graph["tensor_values"] as Decoded[];
  for (let t = 0; t < values.length; t++) {
    const tv = values[t] as Decoded;
    const name = tv["name"] as string;
    if (taken.has(name)) continue;
    taken.add(name);
    yield [[...base, "tensor_values", t, "meta"], name, tv["meta"] as Meta];
  }
  const nodes = graph["nodes"] as Decoded[];
  for (let n = 0; n < nodes.length; n++) {
    const inputs = (nodes[n] as Decoded)["inputs"] as Decoded[];
    for (let a = 0; a < inputs.length; a++) {
      const value = ((inputs[a] as Decoded)["arg"] as Decoded)["value"] as UnionValue | null;
      if (value !== null && value.member === "GraphArg" && value.value !== null) {
        yield* tensorValues(value.value["graph"] as Decoded, [...base, "nodes", n, "inputs", a, "arg", "value", "graph"]);
      }
    }
  }
}

class Check {
  readonly out = new Budget();
  readonly bound = new Set<string>();
  readonly first = new Map<string, [string, Decoded]>();
  readonly owners = new Map<string, [string, number]>();
  readonly dtypeName: Map<number, string>;

  constructor(
    readonly stored: Stored,
    layout: ProgramLayout,
  ) {
    this.dtypeName = new Map(layout.safetensorsDtype);
    for (const [alias, owner] of stored.aliases ?? []) {
      const [first, n] = this.owners.get(owner) ?? [alias, 0];
      this.owners.set(owner, [first, n + 1]);
    }
  }

  error(rule: string, where: string, message: string): void {
    if (this.out.room(rule, "error")) this.out.append(raw(rule, "error", PTG, where, message));
    else this.out.skip(rule, "error");
  }

  /** The entry of `key`'s bytes; false when it is not stored; null when that cannot be known. */
  entry(key: string): StoredEntry | false | null {
    const s = this.stored;
    if (s.tensors === null || s.broken.has(key)) return null;
    const owner = s.aliases === null ? key : (s.aliases.get(key) ?? key);
    if (s.broken.has(owner)) return null;
    const info = s.tensors.get(owner);
    if (info !== undefined) return info;
    return s.aliases === null ? null : false;
  }

  keyIsStored(key: string, where: string, what: string): void {
    this.bound.add(key);
    if (this.entry(key) === false) this.error("ptg-missing-constant", where, `${what} ${NO_DATA}`);
  }

  binding(base: Tokens, c: Decoded): void {
    const name = c["name"] as string;
    const key = c["data_key"] as string;
    const meta = c["meta"] as Meta;
    this.bound.add(key);
    const what = `constant ${repr(name)} (data_key ${repr(key)})`;
    const entry = this.entry(key);
    if (entry === false) this.error("ptg-missing-constant", pointer(...base, "data_key"), `${what} ${NO_DATA}`);
    else if (entry !== null) this.compare(base, what, key, meta, entry);
    this.mutatedAlias(base, c);
    this.conflict(base, c);
    for (const [field, k] of quantKeys(meta)) {
      this.keyIsStored(k, pointer(...base, "meta", "quant", "scheme", field), `${field} ${repr(k)} of ${what}`);
    }
  }

  describe(meta: Meta): string {
    const dtype = this.dtypeName.get(meta.dtype) ?? `dtype code ${meta.dtype}`;
    let text = `${dtype} [${meta.sizes.map(dimText).join(", ")}]`;
    const identity = meta.dim_order.length === meta.sizes.length && meta.dim_order.every((d, i) => d === i);
    if (meta.dim_order.length && !identity) {
      text += ` dim_order [${meta.dim_order.join(", ")}]`;
    }
    const s = scheme(meta);
    if (meta.quant !== null && s !== null) text += ` quantized (${s.member ?? "UnknownMember"})`;
    return text;
  }

  compare(base: Tokens, what: string, key: string, meta: Meta, info: StoredEntry): void {
    const s = scheme(meta);
    if (s !== null && s.member === null) return; // a scheme ptn does not know
    const quantized = s !== null;
    const owner = info.key === key ? "" : ` (the bytes of ${repr(info.key)})`;
    const name = this.dtypeName.get(meta.dtype);
    const want = quantized ? "U8" : name;
    if (want !== info.dtype) {
      const said = quantized
        ? "quantized, so stored as U8"
        : name !== undefined
          ? `${name} in the program`
          : `dtype code ${meta.dtype} in the program, which no safetensors dtype is`;
      this.error("ptg-constant-dtype-mismatch", pointer(...base, "meta", "dtype"),
        `${what} is ${said}; program.safetensors stores ${info.dtype}${owner}`);
    }
    const admits =
      info.shape.length === meta.sizes.length &&
      meta.sizes.every((d, i) => {
        const n = info.shape[i] as bigint;
        return d.min <= n && (d.max < 0n || n <= d.max);
      });
    if (!quantized && !admits) {
      this.error("ptg-constant-shape-mismatch", pointer(...base, "meta", "sizes"),
        `${what} has sizes [${meta.sizes.map(dimText).join(", ")}] in the program; program.safetensors stores ` +
          `shape [${info.shape.join(", ")}]${owner}`);
    }
    const q = affine(meta);
    if (q !== null) this.packedSize(base, what, meta, q, info, owner);
  }

  packedSize(base: Tokens, what: string, meta: Meta, q: AffineGroup, info: StoredEntry, owner: string): void {
    const where = pointer(...base, "meta", "quant");
    const nbytes = info.end - info.begin;
    const b = bits(q);
    const low = meta.sizes.reduce((a, d) => a * d.min, 1n);
    const high = meta.sizes.some((d) => d.max < 0n) ? null : meta.sizes.reduce((a, d) => a * d.max, 1n);
    if (b === null) {
      this.error("ptg-constant-size-mismatch", where,
        `${what} cannot be sized: its quant range [${q.quant_min}, ${q.quant_max}] is empty`);
      return;
    }
    const fewest = ceilDiv(low * b, 8n);
    const most = high === null ? null : ceilDiv(high * b, 8n);
    if (nbytes < fewest || (most !== null && nbytes > most)) {
      const count = high === low ? `${low}` : `${low}..${high === null ? "" : high}`;
      const packed = most === fewest ? `${fewest}` : `${fewest}..${most === null ? "" : most}`;
      this.error("ptg-constant-size-mismatch", where,
        `${what} holds ${nbytes} bytes${owner}; ${count} values of ${b} bits pack into ${packed} bytes`);
    }
  }

  mutatedAlias(base: Tokens, c: Decoded): void {
    const aliases = this.stored.aliases;
    if (c["mutated"] !== true || aliases === null) return;
    const key = c["data_key"] as string;
    let how: string;
    const owner = aliases.get(key);
    const owned = this.owners.get(key);
    if (owner !== undefined) how = `is an alias of ${repr(owner)}`;
    else if (owned !== undefined) how = `owns the bytes of ${owned[1]} alias${owned[1] > 1 ? "es" : ""} (first: ${repr(owned[0])})`;
    else return;
    this.error("ptg-mutated-alias", pointer(...base, "mutated"),
      `constant ${repr(c["name"])} is mutated, but its data_key ${repr(key)} ${how} in aliases.json: ` +
        "a method would write bytes that other keys share");
  }

  metaKey(meta: Meta): string {
    const s = scheme(meta);
    return JSON.stringify([
      meta.dtype,
      meta.sizes.map((d) => [`${d.min}`, `${d.max}`]),
      order(meta),
      s === null ? null : [s.member, s.typeCode, s.value === null ? null : Object.entries(s.value).map(([k, v]) => [k, `${v}`])],
    ]);
  }

  conflict(base: Tokens, c: Decoded): void {
    const key = c["data_key"] as string;
    const seen = this.first.get(key);
    if (seen === undefined) {
      this.first.set(key, [pointer(...base), c]);
      return;
    }
    const [there, first] = seen;
    const a = c["meta"] as Meta;
    const b = first["meta"] as Meta;
    if (this.metaKey(a) !== this.metaKey(b)) {
      let mine = this.describe(a);
      let theirs = this.describe(b);
      if (mine === theirs) {
        mine = `${mine} (one quantization)`;
        theirs = `${theirs} (another)`;
      }
      this.error("ptg-conflicting-binding", pointer(...base, "meta"),
        `data_key ${repr(key)} is bound as ${mine} here and as ${theirs} at ${there}`);
    } else if (c["mutated"] !== first["mutated"]) {
      const said = (m: unknown) => (m ? "mutated" : "not mutated");
      this.error("ptg-conflicting-binding", pointer(...base, "mutated"),
        `data_key ${repr(key)} is bound ${said(c["mutated"])} here and ${said(first["mutated"])} at ${there}`);
    }
  }

  mutableBuffer(base: Tokens, name: string, fqn: string): void {
    const s = this.stored;
    if (s.broken.has(fqn)) return;
    let member: string;
    if (s.tensors !== null && s.tensors.has(fqn)) member = "program.safetensors";
    else if (s.aliases !== null && s.aliases.has(fqn)) member = "aliases.json";
    else return;
    this.error("ptg-mutable-buffer-stored", pointer(...base, "fqn"),
      `mutable buffer ${repr(name)} (fqn ${repr(fqn)}) starts at zero and holds no bytes, but ${member} stores ${repr(fqn)}`);
  }

  unused(): void {
    const s = this.stored;
    if (s.tensors === null) return; // what is stored is not known: the unreadable header's finding says why
    const members: [string, Iterable<string>][] = [
      ["program.safetensors", s.tensors?.keys() ?? []],
      ["aliases.json", s.aliases?.keys() ?? []],
    ];
    for (const [member, keys] of members) {
      for (const key of keys) {
        if (this.bound.has(key) || s.broken.has(key)) continue;
        if (this.out.room("ptg-unused-constant", "warning")) {
          this.out.append(raw("ptg-unused-constant", "warning", member, pointer(key),
            `${repr(key)} is stored, but no method binds it`));
        } else {
          this.out.skip("ptg-unused-constant", "warning");
        }
      }
    }
  }
}

/** Section 4.3's findings, in program order, then the unused keys in member order. */
export function constantFindings(program: Decoded, stored: Stored, layout: ProgramLayout): RawFinding[] {
  const check = new Check(stored, layout);
  (program["methods"] as Decoded[]).forEach((method, i) => {
    (method["constants"] as Decoded[]).forEach((c, j) => check.binding(["methods", i, "constants", j], c));
    (method["mutable_buffers"] as Decoded[]).forEach((b, k) =>
      check.mutableBuffer(["methods", i, "mutable_buffers", k], b["name"] as string, b["fqn"] as string),
    );
    for (const [tokens, name, meta] of tensorValues(method["graph"] as Decoded, ["methods", i, "graph"])) {
      for (const [field, key] of quantKeys(meta)) {
        check.keyIsStored(key, pointer(...tokens, "quant", "scheme", field), `${field} ${repr(key)} of tensor value ${repr(name)}`);
      }
    }
  });
  check.unused();
  return check.out.finish();
}
