// The metadata against the program it describes (spec 9.8; ptn.program.llm_facts and
// ptn.package.agreement in Python, with the same findings and messages). programFacts finds
// what a program shows by fixed patterns that need no operator table: its KV caches (pairs
// of rank-4 state buffers its graph updates with index_put_/index_copy_/copy_, or their
// functional forms handed back by a BUFFER_MUTATION), its embedding table, its logits and
// the most tokens its token input takes; agreementFindings compares the well-known values
// with them, only where the program shows the fact (no guess). A finding is about
// metadata.json (the value's pointer); its message names the program's side with its
// program.ptg pointer.

import type { Decoded, ProgramLayout, UnionValue } from "./program.js";
import { repr } from "./pyrepr.js";
import { NumberList, PtnError, pointer } from "./strict_json.js";
import type { Entry } from "./metadata_core.js";
import { unchecked } from "./metadata_core.js";
import type { RuleInputs } from "./metadata_faults.js";

const UPDATES_IN_PLACE = new Set([
  "torch.ops.aten.index_put_.default",
  "torch.ops.aten.index_copy_.default",
  "torch.ops.aten.copy_.default",
]);
const UPDATES_BY_SPEC = new Set([
  "torch.ops.aten.index_put.default",
  "torch.ops.aten.index_copy.default",
  "torch.ops.aten.slice_scatter.default",
  "torch.ops.aten.copy.default",
]);
const EMBEDDING = "torch.ops.aten.embedding.default";

interface Dim {
  readonly min: bigint;
  readonly max: bigint;
}

function dimText(d: Dim): string {
  if (d.min === d.max) return String(d.min);
  return d.max >= 0n ? `${d.min}..${d.max}` : `${d.min}..`;
}

/** A buffer a method keeps between calls (ptn.program.llm_facts.StateBuffer). */
export interface StateBuffer {
  readonly name: string;
  readonly sizes: readonly Dim[] | null;
  readonly declared: string;
  readonly meta: string | null;
}

function bufferDim(b: StateBuffer, d: number): string {
  const shape = `[${(b.sizes ?? []).map(dimText).join(", ")}]`;
  return `${repr(b.name)} is ${shape} (program.ptg ${b.meta}/sizes/${d})`;
}

/** One layer's KV cache: keys and values buffers of equal sizes [batch, heads, length, dim]. */
export interface Cache {
  readonly keys: StateBuffer;
  readonly values: StateBuffer;
}

function size(c: Cache, d: number): bigint {
  return c.keys.sizes![d]!.min;
}

/** A number the program shows, a sentence saying what shows it, and its program.ptg pointer. */
export interface Extent {
  readonly size: bigint;
  readonly says: string;
  readonly where: string;
}

function extentText(e: Extent): string {
  return `${e.says} (program.ptg ${e.where})`;
}

/** What a program shows; null where it does not show the fact unambiguously. */
export interface LlmFacts {
  /** The caches in order; [] when no state buffer is updated at all (no KV cache). */
  readonly caches: readonly Cache[] | null;
  readonly embedding: Extent | null;
  readonly logits: Extent | null;
  readonly tokens: Extent | null;
}

type Enums = ProgramLayout["enums"];

function dims(meta: Decoded): Dim[] {
  return (meta["sizes"] as Decoded[]).map((d) => ({ min: d["min"] as bigint, max: d["max"] as bigint }));
}

/** The tensor a node passes as parameter `name`: the input so named, else the unnamed input
 * at `position`; null when that is no TensorArg. */
function tensorArg(node: Decoded, name: string, position: number): string | null {
  const inputs = node["inputs"] as Decoded[];
  let arg = inputs.find((a) => a["name"] === name);
  if (arg === undefined && position < inputs.length && !inputs[position]!["name"]) arg = inputs[position];
  if (arg === undefined) return null;
  const union = (arg["arg"] as Decoded)["value"] as UnionValue | null;
  if (union === null || union.member !== "TensorArg" || union.value === null) return null;
  return union.value["name"] as string;
}

class MethodFacts {
  readonly state = new Map<string, [string, StateBuffer]>();
  readonly handed = new Map<string, string>();
  readonly bindings = new Map<string, [number, Decoded]>();
  readonly values = new Map<string, [number, Decoded]>();
  readonly graph: Decoded;
  readonly name: string;

  constructor(
    readonly i: number,
    readonly method: Decoded,
    readonly enums: Enums,
  ) {
    this.graph = method["graph"] as Decoded;
    this.name = method["name"] as string;
    const tensorValues = this.graph["tensor_values"] as Decoded[];
    tensorValues.forEach((tv, t) => {
      const name = tv["name"] as string;
      if (!this.values.has(name)) this.values.set(name, [t, tv["meta"] as Decoded]);
    });
    const constants = method["constants"] as Decoded[];
    constants.forEach((c, j) => {
      const name = c["name"] as string;
      if (!this.bindings.has(name)) this.bindings.set(name, [j, c]);
      if (!c["mutated"]) return;
      const at = pointer("methods", i, "constants", j);
      const key = c["data_key"] as string;
      const buffer = { name: key, sizes: dims(c["meta"] as Decoded), declared: at, meta: `${at}/meta` };
      if (!this.state.has(name)) this.state.set(name, [`constant\u0000${key}`, buffer]);
    });
    (method["mutable_buffers"] as Decoded[]).forEach((b, j) => {
      const name = b["name"] as string;
      const fqn = b["fqn"] as string;
      const value = this.values.get(name);
      const buffer = {
        name: fqn,
        sizes: value === undefined ? null : dims(value[1]),
        declared: pointer("methods", i, "mutable_buffers", j),
        meta: value === undefined ? null : this.metaPointer(value[0]),
      };
      if (!this.state.has(name)) this.state.set(name, [`buffer\u0000${fqn}`, buffer]);
    });
    const mutation = enums["OutputKind"]?.["BUFFER_MUTATION"] ?? 1;
    for (const spec of method["output_specs"] as Decoded[]) {
      const name = spec["name"] as string;
      if (spec["kind"] === mutation && !this.handed.has(name)) this.handed.set(name, spec["target"] as string);
    }
  }

  metaPointer(t: number): string {
    return pointer("methods", this.i, "graph", "tensor_values", t, "meta");
  }

  walk(updated: Map<string, StateBuffer>, tables: Map<string, Extent>, tokens: (Extent | null)[], widths: Extent[]): void {
    const call = this.enums["OpKind"]?.["CALL_FUNCTION"] ?? 0;
    const inputs = new Set(this.graph["inputs"] as string[]);
    const tokenInputs = new Set<string>(); // in order of first use
    for (const node of this.graph["nodes"] as Decoded[]) {
      if (node["op_kind"] !== call) continue;
      const target = node["target"] as string;
      if (UPDATES_IN_PLACE.has(target) || UPDATES_BY_SPEC.has(target)) {
        const found = this.state.get(tensorArg(node, "self", 0) ?? "");
        if (found !== undefined && this.updates(node, target, found[1]) && !updated.has(found[0])) {
          updated.set(found[0], found[1]);
        }
      } else if (target === EMBEDDING) {
        const table = this.embedding(node);
        const indices = tensorArg(node, "indices", 1);
        if (table !== null && indices !== null && inputs.has(indices)) {
          if (!tables.has(table[0])) tables.set(table[0], table[1]);
          tokenInputs.add(indices);
        }
      }
    }
    for (const name of tokenInputs) tokens.push(this.sequence(name));
    if (tokenInputs.size > 0) {
      const width = this.logits();
      if (width !== null) widths.push(width);
    }
  }

  updates(node: Decoded, target: string, buffer: StateBuffer): boolean {
    if (UPDATES_IN_PLACE.has(target)) return true;
    const outputs = node["outputs"] as Decoded[];
    const first = outputs.length > 0 ? (outputs[0]!["name"] as string) : "";
    return this.handed.has(first) && this.handed.get(first) === buffer.name;
  }

  embedding(node: Decoded): [string, Extent] | null {
    const bound = this.bindings.get(tensorArg(node, "weight", 0) ?? "");
    if (bound === undefined) return null;
    const [j, c] = bound;
    const sizes = dims(c["meta"] as Decoded);
    if (sizes.length !== 2 || !sizes.every((d) => d.min === d.max)) return null;
    const key = c["data_key"] as string;
    const rows = sizes[0]!.min;
    const where = pointer("methods", this.i, "constants", j, "meta", "sizes", 0);
    return [key, { size: rows, says: `the embedding table ${repr(key)} has ${rows} rows`, where }];
  }

  sequence(name: string): Extent | null {
    const value = this.values.get(name);
    if (value === undefined) return null;
    const sizes = dims(value[1]);
    const last = sizes[sizes.length - 1];
    if (last === undefined || last.max < 0n) return null;
    const says = `the token input ${repr(name)} of method ${repr(this.name)} takes at most ${last.max} tokens`;
    return { size: last.max, says, where: `${this.metaPointer(value[0])}/sizes/${sizes.length - 1}` };
  }

  logits(): Extent | null {
    const userOutput = this.enums["OutputKind"]?.["USER_OUTPUT"] ?? 0;
    const user = (this.method["output_specs"] as Decoded[]).filter((s) => s["kind"] === userOutput);
    if (user.length !== 1) return null;
    const name = user[0]!["name"] as string;
    const value = this.values.get(name);
    if (value === undefined) return null;
    const sizes = dims(value[1]);
    const last = sizes[sizes.length - 1];
    if (sizes.length < 2 || last === undefined || last.min !== last.max) return null;
    const says = `the logits ${repr(name)} of method ${repr(this.name)} are ${last.min} wide`;
    return { size: last.min, says, where: `${this.metaPointer(value[0])}/sizes/${sizes.length - 1}` };
  }
}

function cachesOf(updated: StateBuffer[]): Cache[] | null {
  if (updated.length === 0) return [];
  if (updated.some((b) => b.sizes === null)) return null;
  const ranked = updated.filter((b) => b.sizes!.length === 4);
  if (ranked.length === 0 || ranked.length % 2 !== 0) return null;
  if (!ranked.every((b) => b.sizes!.every((d) => d.min === d.max))) return null;
  const pairs: Cache[] = [];
  for (let k = 0; k < ranked.length; k += 2) {
    const keys = ranked[k]!;
    const values = ranked[k + 1]!;
    if (!keys.sizes!.every((d, i) => d.min === values.sizes![i]!.min && d.max === values.sizes![i]!.max)) {
      return null;
    }
    pairs.push({ keys, values });
  }
  return pairs;
}

/** What `program` shows of the facts LLM metadata states (spec 9.8). */
export function programFacts(program: Decoded, layout: ProgramLayout): LlmFacts {
  const updated = new Map<string, StateBuffer>();
  const tables = new Map<string, Extent>();
  const tokens: (Extent | null)[] = [];
  const widths: Extent[] = [];
  (program["methods"] as Decoded[]).forEach((m, i) => new MethodFacts(i, m, layout.enums).walk(updated, tables, tokens, widths));
  let longest: Extent | null = null;
  if (tokens.length > 0 && tokens.every((t) => t !== null)) {
    for (const t of tokens) if (longest === null || t!.size > longest.size) longest = t;
  }
  return {
    caches: cachesOf([...updated.values()]),
    embedding: tables.size === 1 ? [...tables.values()][0]! : null,
    logits: widths.length > 0 && widths.every((w) => w.size === widths[0]!.size) ? widths[0]! : null,
    tokens: longest,
  };
}

// -- the rules ------------------------------------------------------------------------------

/** A finding as the package validator yields it. */
export interface AgreementFinding {
  readonly rule: string;
  readonly severity: "error" | "warning";
  readonly pointer: string;
  readonly message: string;
}

const GEOMETRY = ["get_kv_heads", "get_head_dims", "get_windows"];
const COUNTS = ["get_n_caches", ...GEOMETRY, "get_n_layers"];

function ints(entry: Entry): bigint[] {
  if (entry instanceof NumberList) return Array.from(entry.values, (v) => BigInt(v));
  if (Array.isArray(entry)) return (entry as unknown[]).map((v) => BigInt(v as bigint | number));
  return [BigInt(entry as bigint)];
}

function entries(n: number): string {
  return `${n} ${n === 1 ? "entry" : "entries"}`;
}

class Agreement {
  readonly errors: AgreementFinding[] = [];
  readonly warnings: AgreementFinding[] = [];

  readonly values: ReadonlyMap<string, Entry>;
  readonly broken: ReadonlyMap<string, string>;

  constructor(
    readonly facts: LlmFacts,
    inputs: RuleInputs,
  ) {
    this.values = inputs.values as ReadonlyMap<string, Entry>;
    this.broken = inputs.broken;
  }

  present(name: string): boolean {
    return this.values.has(name) || this.broken.has(name);
  }

  int(name: string): bigint {
    return ints(this.values.get(name)!)[0]!;
  }

  error(rule: string, where: string, message: string): void {
    this.errors.push({ rule, severity: "error", pointer: where, message });
  }

  checkable(rule: string, names: readonly string[]): boolean {
    const bad = names.filter((n) => this.broken.has(n));
    if (bad.length > 0) {
      const e: PtnError = unchecked(rule, bad, this.broken);
      this.warnings.push({ rule: e.rule, severity: "warning", pointer: e.pointer ?? "", message: e.detail });
    }
    return bad.length === 0;
  }

  perCache(name: string): bigint[] | null {
    const caches = this.facts.caches;
    const entry = this.values.get(name);
    if (caches === null || caches.length === 0 || entry === undefined) return null;
    const listed = ints(entry);
    return listed.length === caches.length ? listed : null;
  }

  cacheCount(): void {
    const caches = this.facts.caches;
    const name = COUNTS.find((n) => this.present(n));
    if (caches === null || caches.length === 0 || name === undefined) return;
    const shared = "get_num_kv_shared_layers";
    const names = name === "get_n_layers" && this.present(shared) ? [name, shared] : [name];
    if (!this.checkable("llm-cache-count-mismatch", names)) return;
    let said: bigint;
    let source: string;
    if (GEOMETRY.includes(name)) {
      const n = ints(this.values.get(name)!).length;
      said = BigInt(n);
      source = `${name} has ${entries(n)}`;
    } else if (names.length === 2) {
      const value = this.int(name);
      const skip = this.int(shared);
      said = value - skip;
      source = `get_n_layers - ${shared} = ${value} - ${skip} = ${said}`;
    } else {
      said = this.int(name);
      source = `${name} = ${said}`;
    }
    const n = caches.length;
    if (said !== BigInt(n)) {
      const first = caches[0]!.keys;
      this.error(
        "llm-cache-count-mismatch",
        pointer(name),
        `${source}, but the program keeps ${n} KV cache${n === 1 ? "" : "s"} (${2 * n} buffers of rank 4 ` +
          `that its graph updates, paired as keys and values; the first, ${repr(first.name)}, at ` +
          `program.ptg ${first.declared})`,
      );
    }
  }

  cacheGeometry(): void {
    const caches = this.facts.caches;
    if (caches === null || caches.length === 0) return;
    const names = ["get_kv_heads", "get_head_dims"].filter((n) => this.present(n));
    for (const [name, d, label] of [["get_kv_heads", 1, "KV heads"], ["get_head_dims", 3, "head dim"]] as const) {
      const listed = this.perCache(name);
      if (listed === null) continue;
      const wrong = listed.map((v, i) => [v, i] as const).filter(([v, i]) => v !== size(caches[i]!, d));
      if (wrong.length === 0) continue;
      const [v, i] = wrong[0]!;
      const more = wrong.length - 1;
      this.error(
        "llm-cache-geometry-mismatch",
        pointer(name, i),
        `${name}[${i}] = ${v}, but dimension ${d} of cache ${i} (${label}) is ${size(caches[i]!, d)}: ` +
          bufferDim(caches[i]!.keys, d) +
          (more > 0 ? `; ${more} more ${more === 1 ? "entry differs" : "entries differ"}` : ""),
      );
    }
    this.checkable("llm-cache-geometry-mismatch", names);
  }

  windows(): void {
    const caches = this.facts.caches;
    if (caches === null || caches.length === 0 || !this.present("get_windows")) return;
    if (!this.checkable("llm-window-exceeds-cache", ["get_windows"])) return;
    const listed = this.perCache("get_windows") ?? [];
    for (let i = 0; i < listed.length; i++) {
      const length = size(caches[i]!, 2);
      if (listed[i]! > length) {
        this.error(
          "llm-window-exceeds-cache",
          pointer("get_windows", i),
          `get_windows[${i}] = ${listed[i]}, but cache ${i} holds ${length} positions: ` +
            `${bufferDim(caches[i]!.keys, 2)}; a window longer than its cache needs positions the cache no longer holds`,
        );
        return;
      }
    }
  }

  fullHistory(caches: readonly Cache[]): [number, string][] {
    if (!this.values.has("get_windows")) return caches.map((_, i) => [i, "get_windows is absent"]);
    const listed = this.perCache("get_windows") ?? [];
    const out: [number, string][] = [];
    listed.forEach((w, i) => {
      if (w === 0n) out.push([i, `get_windows[${i}] = 0`]);
    });
    return out;
  }

  context(): void {
    const name = "get_max_context_len";
    const { caches, tokens } = this.facts;
    const shown = (caches !== null && caches.length > 0) || (caches !== null && caches.length === 0 && tokens !== null);
    if (!this.present(name) || !shown) return;
    if (caches!.length > 0) {
      const names = [name, ...(this.present("get_windows") ? ["get_windows"] : [])];
      if (!this.checkable("llm-context-exceeds-program", names)) return;
      const longest = this.int(name);
      for (const [i, why] of this.fullHistory(caches!)) {
        const length = size(caches![i]!, 2);
        if (length < longest) {
          this.error(
            "llm-context-exceeds-program",
            pointer(name),
            `${name} = ${longest}, but cache ${i} keeps the full history (${why}) and holds ${length} ` +
              `positions: ${bufferDim(caches![i]!.keys, 2)}`,
          );
          return;
        }
      }
      return;
    }
    if (!this.checkable("llm-context-exceeds-program", [name])) return;
    const value = this.int(name);
    if (value > tokens!.size) {
      this.error(
        "llm-context-exceeds-program",
        pointer(name),
        `${name} = ${value}, but the program keeps no KV cache, so one call sees the whole context, and ` +
          extentText(tokens!),
      );
    }
  }

  seqLen(): void {
    const name = "get_max_seq_len";
    const { caches, tokens } = this.facts;
    if (!this.present(name) || !((caches !== null && caches.length > 0) || tokens !== null)) return;
    if (!this.checkable("llm-seq-len-exceeds-program", [name])) return;
    const step = this.int(name);
    if (tokens !== null && step > tokens.size) {
      this.error("llm-seq-len-exceeds-program", pointer(name), `${name} = ${step}, but ${extentText(tokens)}`);
      return;
    }
    (caches ?? []).some((cache, i) => {
      const length = size(cache, 2);
      if (length >= step) return false;
      this.error(
        "llm-seq-len-exceeds-program",
        pointer(name),
        `${name} = ${step}, but cache ${i} holds ${length} positions: ${bufferDim(cache.keys, 2)}; ` +
          "one step must fit every cache",
      );
      return true;
    });
  }

  vocabulary(): void {
    const name = "get_vocab_size";
    const shown = [this.facts.logits, this.facts.embedding].filter((e): e is Extent => e !== null);
    if (shown.length === 0 || !this.present(name)) return;
    if (!this.checkable("llm-vocab-mismatch", [name])) return;
    const value = this.int(name);
    const wrong = shown.filter((e) => e.size !== value).map(extentText);
    if (wrong.length > 0) {
      this.error("llm-vocab-mismatch", pointer(name), `${name} = ${value}, but ${wrong.join(" and ")}`);
    }
  }

  tokenIds(): void {
    const vocabulary = this.facts.embedding ?? this.facts.logits;
    if (vocabulary === null || this.present("get_vocab_size")) return;
    const names = ["get_bos_id", "get_eos_ids"].filter((n) => this.present(n));
    for (const name of names) {
      const entry = this.values.get(name);
      if (entry === undefined) continue;
      const list = name === "get_eos_ids";
      const items = ints(entry);
      for (let index = 0; index < items.length; index++) {
        if (items[index]! >= vocabulary.size) {
          const label = list ? `${name}[${index}]` : name;
          this.error(
            "llm-token-id-out-of-range",
            list ? pointer(name, index) : pointer(name),
            `${label} = ${items[index]} is not below the program's vocabulary: ${extentText(vocabulary)}`,
          );
          this.checkable("llm-token-id-out-of-range", names);
          return;
        }
      }
    }
    this.checkable("llm-token-id-out-of-range", names);
  }
}

/** Every disagreement of the metadata's well-known values with `facts` (spec 9.8): errors
 * in rule order, then the llm-rule-unchecked warnings. */
export function agreementFindings(facts: LlmFacts, inputs: RuleInputs): AgreementFinding[] {
  const check = new Agreement(facts, inputs);
  check.cacheCount();
  check.cacheGeometry();
  check.windows();
  check.context();
  check.seqLen();
  check.vocabulary();
  check.tokenIds();
  return [...check.errors, ...check.warnings];
}
