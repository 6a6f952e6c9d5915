// metadata.json for the ptn TypeScript binding: values, typed reads and the schema checks.
//
// Nothing here names a well-known name or a rule: metadata.ts (generated from
// schema/metadata.schema.json) passes the name grammar, the well-known names and the
// x-ptn-rules in as tables, and derives Metadata with one accessor per name. The checks
// run in the order of the Python reference (ptn.metadata): top-level object, then per
// name in document order its grammar and its value, then the well-known names in schema
// order, then the x-ptn-rules in schema order.

import { type JsonValue, PtnError, parseJson, pointer } from "./strict_json.js";

export const METADATA_MEMBER = "metadata.json";
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** "list" is `[]`, which reads as a list of any kind. */
export type Kind = "bool" | "int" | "float" | "str" | "bools" | "ints" | "floats" | "strs" | "list";
/** Integers are bigint, floats number. */
export type Scalar = boolean | bigint | number | string;
export type Value = Scalar | boolean[] | bigint[] | number[] | string[];

/** One well-known name (a `properties` entry of the schema). */
export interface WellKnownSpec {
  readonly name: string;
  readonly kind: Exclude<Kind, "list">;
  readonly minimum: bigint | number | null;
  readonly maximum: bigint | number | null;
  readonly enum: readonly Scalar[] | null;
  readonly minItems: number | null;
  readonly description: string;
}

/** One x-ptn-rules entry. */
export interface RuleSpec {
  readonly id: string;
  readonly kind: "together" | "equal-length" | "less-than";
  readonly names: readonly string[];
  readonly lengthName?: string;
  readonly bound?: string;
  readonly requiredBy?: string;
}

/** What the generated module hands to the runtime. */
export interface SchemaTables {
  readonly schemaId: string;
  /** Python `re` syntax; compiled with the "u" flag and matched at the start (sticky). */
  readonly namePattern: string;
  readonly nameMaxChars: number;
  readonly wellKnown: readonly WellKnownSpec[];
  readonly rules: readonly RuleSpec[];
}

interface Entry {
  readonly kind: Kind;
  readonly value: Value;
}

const KIND_WORDS: Record<Kind, string> = {
  bool: "a bool",
  int: "an integer",
  float: "a float",
  str: "a string",
  bools: "a list of bools",
  ints: "a list of integers",
  floats: "a list of numbers",
  strs: "a list of strings",
  list: "an empty list",
};
const PLURALS: Record<string, string> = {
  bool: "bools",
  int: "integers",
  float: "floats",
  str: "strings",
};

function metadataError(rule: string, detail: string, where: string): PtnError {
  return new PtnError(rule, detail, { member: METADATA_MEMBER, pointer: where });
}

function scalarKind(value: Scalar): "bool" | "int" | "float" | "str" {
  switch (typeof value) {
    case "boolean":
      return "bool";
    case "bigint":
      return "int";
    case "number":
      return "float";
    default:
      return "str";
  }
}

function text(value: Scalar | null): string {
  if (value === null) return "None";
  if (typeof value === "string") return JSON.stringify(value);
  return String(value);
}

function isNumeric(value: Scalar): value is bigint | number | boolean {
  return typeof value !== "string";
}

function numeric(value: bigint | number | boolean): bigint | number {
  return typeof value === "boolean" ? (value ? 1n : 0n) : value;
}

/** a < b for two numbers (bigint and number compare exactly) or two strings. */
function less(a: Scalar, b: Scalar): boolean {
  if (isNumeric(a) && isNumeric(b)) return numeric(a) < numeric(b);
  if (typeof a === "string" && typeof b === "string") return a < b;
  return false;
}

/** Python equality: numbers (and bools) by value, strings by text. */
function equal(a: Scalar, b: Scalar): boolean {
  if (isNumeric(a) && isNumeric(b)) {
    const x = numeric(a);
    const y = numeric(b);
    return typeof x === typeof y ? x === y : x == y;
  }
  return typeof a === "string" && typeof b === "string" && a === b;
}

function itemsOf(entry: Entry): readonly Scalar[] {
  return Array.isArray(entry.value) ? (entry.value as readonly Scalar[]) : [entry.value as Scalar];
}

function isList(kind: Kind): boolean {
  return kind.endsWith("s") || kind === "list";
}

/** Check one scalar (spec 9.2); `index` is its position in a list. */
function scalar(value: JsonValue, name: string, index: number | null): Scalar {
  const where = index === null ? pointer(name) : pointer(name, index);
  switch (typeof value) {
    case "boolean":
    case "string":
      return value;
    case "bigint":
      if (value < INT64_MIN || value > INT64_MAX) {
        throw metadataError(
          "metadata-int-out-of-range",
          `${value} is outside int64 [-2**63, 2**63-1]`,
          where,
        );
      }
      return value;
    case "number":
      if (!Number.isFinite(value)) {
        throw metadataError(
          "metadata-nonfinite-float",
          `${value} is not finite; write a finite number`,
          where,
        );
      }
      return value;
    default:
      break;
  }
  if (index !== null && (Array.isArray(value) || value instanceof Map)) {
    throw metadataError(
      "metadata-nested-list",
      "lists must be flat: an item is itself a list or object",
      where,
    );
  }
  const type = value === null ? "null" : Array.isArray(value) ? "list" : "an object";
  throw metadataError(
    "metadata-invalid-value",
    `${type} is not a metadata value; use a bool, integer, float, string or a flat list of one of those`,
    where,
  );
}

/** Check one value; int/float mixes become float lists. */
function entryOf(value: JsonValue, name: string): Entry {
  if (!Array.isArray(value)) {
    const item = scalar(value, name, null);
    return { kind: scalarKind(item), value: item };
  }
  const items = value.map((item, i) => scalar(item, name, i));
  if (items.length === 0) return { kind: "list", value: [] };
  const kinds = new Set(items.map(scalarKind));
  if (kinds.size === 1) {
    return { kind: `${scalarKind(items[0]!)}s` as Kind, value: items as Value };
  }
  if (kinds.size === 2 && kinds.has("int") && kinds.has("float")) {
    return { kind: "floats", value: items.map((v) => Number(v)) };
  }
  const first = scalarKind(items[0]!);
  const odd = items.findIndex((v) => scalarKind(v) !== first);
  throw metadataError(
    "metadata-mixed-list",
    `list mixes ${PLURALS[first]} and ${PLURALS[scalarKind(items[odd]!)]} ` +
      "(only integers and floats may mix); lists must be homogeneous",
    pointer(name, odd),
  );
}

const compiled = new WeakMap<SchemaTables, RegExp>();

function nameRegex(tables: SchemaTables): RegExp {
  let regex = compiled.get(tables);
  if (regex === undefined) {
    regex = new RegExp(tables.namePattern, "uy");
    compiled.set(tables, regex);
  }
  return regex;
}

function checkName(name: string, tables: SchemaTables): void {
  const regex = nameRegex(tables);
  regex.lastIndex = 0;
  if ([...name].length > tables.nameMaxChars || !regex.test(name)) {
    throw metadataError(
      "metadata-invalid-name",
      `name ${JSON.stringify(name)} must be 1..${tables.nameMaxChars} characters matching ` +
        tables.namePattern,
      pointer(name),
    );
  }
}

function checkWellKnown(spec: WellKnownSpec, entry: Entry): void {
  const { name } = spec;
  if (entry.kind !== spec.kind && !(entry.kind === "list" && isList(spec.kind))) {
    throw metadataError(
      "llm-wrong-type",
      `${name} must be ${KIND_WORDS[spec.kind]}, got ${KIND_WORDS[entry.kind]}`,
      pointer(name),
    );
  }
  const items = itemsOf(entry);
  if (spec.minItems !== null && items.length < spec.minItems) {
    throw metadataError(
      "llm-value-out-of-range",
      `${name} needs at least ${spec.minItems} entries`,
      pointer(name),
    );
  }
  const list = Array.isArray(entry.value);
  items.forEach((item, i) => {
    const where = list ? pointer(name, i) : pointer(name);
    if (spec.enum !== null && !spec.enum.some((choice) => equal(item, choice))) {
      throw metadataError(
        "llm-value-out-of-range",
        `${name} = ${text(item)} is not one of [${spec.enum.map(text).join(", ")}]`,
        where,
      );
    }
    if (
      (spec.minimum !== null && less(item, spec.minimum)) ||
      (spec.maximum !== null && less(spec.maximum, item))
    ) {
      throw metadataError(
        "llm-value-out-of-range",
        `${name} = ${text(item)} is outside [${text(spec.minimum)}, ${text(spec.maximum)}]`,
        where,
      );
    }
  });
}

// The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind.
type Checker = (rule: RuleSpec, values: ReadonlyMap<string, Entry>) => PtnError | null;

const KIND_CHECKERS: Record<RuleSpec["kind"], Checker> = {
  /** All of `names` or none; `required-by`, when present, requires all of them. */
  together(rule, values) {
    const present = rule.names.filter((n) => values.has(n));
    const missing = rule.names.filter((n) => !values.has(n));
    const triggered = rule.requiredBy !== undefined && values.has(rule.requiredBy);
    if (missing.length === 0 || (present.length === 0 && !triggered)) return null;
    const why = present.length > 0 ? present.join(", ") : rule.requiredBy;
    return metadataError(
      rule.id,
      `${missing.join(", ")} missing while ${why} present; ` +
        `give all of ${rule.names.join(", ")} or none`,
      pointer(missing[0]!),
    );
  },

  /** Present lists of `names` have one length, equal to `length-name` when present. */
  "equal-length"(rule, values) {
    const lengths = rule.names
      .filter((n) => values.has(n))
      .map((n) => [n, itemsOf(values.get(n)!).length] as const);
    if (lengths.length === 0) return null;
    const count = rule.lengthName === undefined ? undefined : values.get(rule.lengthName);
    let expected: Scalar;
    let source: string;
    if (count !== undefined && !Array.isArray(count.value)) {
      expected = count.value as Scalar;
      source = `${rule.lengthName} = ${text(expected)}`;
    } else {
      expected = lengths[0]![1];
      source = `${lengths[0]![0]} has ${expected}`;
    }
    for (const [name, length] of lengths) {
      if (!equal(length, expected)) {
        return metadataError(
          rule.id,
          `${name} has ${length} entries but ${source}; give one entry per cache`,
          pointer(name),
        );
      }
    }
    return null;
  },

  /** Each value (or list item) of `names` is below the value of `bound`, when both exist. */
  "less-than"(rule, values) {
    const bound = rule.bound === undefined ? undefined : values.get(rule.bound);
    if (bound === undefined || Array.isArray(bound.value)) return null;
    const limit = bound.value as Scalar;
    for (const name of rule.names) {
      const entry = values.get(name);
      if (entry === undefined) continue;
      const list = Array.isArray(entry.value);
      const items = itemsOf(entry);
      for (let i = 0; i < items.length; i++) {
        if (!less(items[i]!, limit)) {
          const label = list ? `${name}[${i}]` : name;
          return metadataError(
            rule.id,
            `${label} = ${text(items[i]!)} is not below ${rule.bound} = ${text(limit)}`,
            list ? pointer(name, i) : pointer(name),
          );
        }
      }
    }
    return null;
  },
};

/** Check every rule of spec chapter 9 on a parsed document; return the values. */
function validate(document: JsonValue, tables: SchemaTables): Map<string, Entry> {
  if (!(document instanceof Map)) {
    const type =
      document === null ? "null" : Array.isArray(document) ? "list" : scalarKind(document);
    throw metadataError("metadata-not-object", `metadata must be a JSON object, got ${type}`, "");
  }
  const values = new Map<string, Entry>();
  for (const [name, raw] of document) {
    checkName(name, tables);
    values.set(name, entryOf(raw, name));
  }
  for (const spec of tables.wellKnown) {
    const entry = values.get(spec.name);
    if (entry !== undefined) checkWellKnown(spec, entry);
  }
  for (const rule of tables.rules) {
    const error = KIND_CHECKERS[rule.kind](rule, values);
    if (error) throw error;
  }
  return values;
}

export interface IntRange {
  minimum?: bigint;
  maximum?: bigint;
}

/**
 * Validated metadata.json contents; immutable. The generated Metadata class adds one
 * accessor per well-known name. Every failure is a PtnError with the rule id of spec.md.
 */
export class MetadataBase {
  readonly #values: ReadonlyMap<string, Entry>;

  protected constructor(input: string | Uint8Array, tables: SchemaTables) {
    const document = parseJson(input, { member: METADATA_MEMBER });
    this.#values = validate(document, tables);
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  get size(): number {
    return this.#values.size;
  }

  /** The names in document order. */
  names(): string[] {
    return [...this.#values.keys()];
  }

  /** bool/int/float/str, the same with "s" for lists, "list" for `[]`. */
  kind(name: string): Kind {
    return this.#require(name).kind;
  }

  /** The value (a copy for lists); metadata-missing-name if absent. */
  value(name: string): Value {
    const value = this.#require(name).value;
    return Array.isArray(value) ? (value.slice() as Value) : value;
  }

  /** An integer (never a float or a bool); optional bounds for the caller's own range. */
  metadataInt(name: string, range: IntRange = {}): bigint {
    const value = this.#read(name, ["int"], "int").value as bigint;
    return this.#bounded(name, [value], range)[0]!;
  }

  /** A list of integers (or `[]`). */
  metadataInts(name: string, range: IntRange = {}): bigint[] {
    const value = this.#read(name, ["ints", "list"], "ints").value as bigint[];
    return this.#bounded(name, value.slice(), range);
  }

  /** A float; an integer is accepted and converted. */
  metadataFloat(name: string): number {
    return Number(this.#read(name, ["float", "int"], "float").value as number | bigint);
  }

  /** A list of numbers (a float list, an integer list or `[]`). */
  metadataFloats(name: string): number[] {
    const value = this.#read(name, ["floats", "ints", "list"], "floats").value;
    return (value as (number | bigint)[]).map((v) => Number(v));
  }

  metadataStr(name: string): string {
    return this.#read(name, ["str"], "str").value as string;
  }

  metadataStrs(name: string): string[] {
    return (this.#read(name, ["strs", "list"], "strs").value as string[]).slice();
  }

  metadataBool(name: string): boolean {
    return this.#read(name, ["bool"], "bool").value as boolean;
  }

  metadataBools(name: string): boolean[] {
    return (this.#read(name, ["bools", "list"], "bools").value as boolean[]).slice();
  }

  // Well-known accessors: absent -> undefined (validation fixed the kind).
  protected optionalInt(name: string): bigint | undefined {
    return this.has(name) ? this.metadataInt(name) : undefined;
  }
  protected optionalInts(name: string): bigint[] | undefined {
    return this.has(name) ? this.metadataInts(name) : undefined;
  }
  protected optionalFloat(name: string): number | undefined {
    return this.has(name) ? this.metadataFloat(name) : undefined;
  }
  protected optionalFloats(name: string): number[] | undefined {
    return this.has(name) ? this.metadataFloats(name) : undefined;
  }
  protected optionalStr(name: string): string | undefined {
    return this.has(name) ? this.metadataStr(name) : undefined;
  }
  protected optionalStrs(name: string): string[] | undefined {
    return this.has(name) ? this.metadataStrs(name) : undefined;
  }
  protected optionalBool(name: string): boolean | undefined {
    return this.has(name) ? this.metadataBool(name) : undefined;
  }
  protected optionalBools(name: string): boolean[] | undefined {
    return this.has(name) ? this.metadataBools(name) : undefined;
  }

  #require(name: string): Entry {
    const entry = this.#values.get(name);
    if (entry === undefined) {
      throw metadataError(
        "metadata-missing-name",
        `no metadata named ${JSON.stringify(name)}`,
        pointer(name),
      );
    }
    return entry;
  }

  #read(name: string, accepted: readonly Kind[], wanted: Kind): Entry {
    const entry = this.#require(name);
    if (!accepted.includes(entry.kind)) {
      throw metadataError(
        "metadata-wrong-kind",
        `${name} is ${KIND_WORDS[entry.kind]}, not ${KIND_WORDS[wanted]}`,
        pointer(name),
      );
    }
    return entry;
  }

  #bounded(name: string, items: bigint[], range: IntRange): bigint[] {
    const { minimum, maximum } = range;
    for (const item of items) {
      if ((minimum !== undefined && item < minimum) || (maximum !== undefined && item > maximum)) {
        throw metadataError(
          "metadata-read-out-of-range",
          `${name} = ${item} is outside the range the reader asked for ` +
            `[${minimum ?? "None"}, ${maximum ?? "None"}]`,
          pointer(name),
        );
      }
    }
    return items;
  }
}
