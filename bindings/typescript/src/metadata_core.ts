// metadata.json for the ptn TypeScript binding: values, typed reads and the schema checks.
//
// Nothing here names a well-known name or a rule: metadata.ts (generated from
// schema/metadata.schema.json) passes the name grammar, the well-known names and the
// x-ptn-rules in as tables, and derives Metadata with one accessor per name. The checks
// run in the order of the Python reference (ptn.metadata.document): top-level object, then per
// name in document order its grammar and its value, then the well-known names in schema
// order, then the x-ptn-rules in schema order.

import {
  NumberList,
  type PackedValue,
  PtnError,
  parseJsonPacked,
  pointer,
} from "./strict_json.js";

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

/**
 * @internal A validated value as stored: its kind follows from it (a bigint is an int, a number a
 * float, a NumberList the ints or floats it says, a list its first item's kind). No
 * object per name, and lists of numbers packed, so millions of values cost little more
 * than the document.
 */
export type Entry = Scalar | boolean[] | bigint[] | number[] | string[] | NumberList;

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
const PLURALS: Record<"bool" | "int" | "float" | "str", string> = {
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

function kindOf(entry: Entry): Kind {
  if (entry instanceof NumberList) return entry.ints ? "ints" : "floats";
  if (Array.isArray(entry)) return entry.length === 0 ? "list" : `${scalarKind(entry[0]!)}s`;
  return scalarKind(entry);
}

function isListEntry(entry: Entry): entry is Exclude<Entry, Scalar> {
  return Array.isArray(entry) || entry instanceof NumberList;
}

/** The value as the API shows it: a fresh array for a list (integers as bigint). */
function valueOf(entry: Entry): Value {
  if (entry instanceof NumberList) {
    return entry.ints ? Array.from(entry.values, (v) => BigInt(v)) : Array.from(entry.values);
  }
  return Array.isArray(entry) ? (entry.slice() as Value) : entry;
}

function itemsOf(entry: Entry): readonly Scalar[] {
  if (entry instanceof NumberList) return valueOf(entry) as readonly Scalar[];
  return Array.isArray(entry) ? (entry as readonly Scalar[]) : [entry];
}

function lengthOf(entry: Entry): number {
  if (entry instanceof NumberList) return entry.values.length;
  return Array.isArray(entry) ? entry.length : 1;
}

function isList(kind: Kind): boolean {
  return kind.endsWith("s") || kind === "list";
}

/** Check one scalar (spec 9.2); `index` is its position in a list. */
function scalar(value: PackedValue, name: string, index: number | null): Scalar {
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

/**
 * @internal Check one value; int/float mixes become float lists. `value` is the parser's own: a
 * homogeneous list is kept as it is, not copied.
 */
export function entryOf(value: PackedValue, name: string): Entry {
  if (value instanceof NumberList) return value; // integers of 15 digits, finite floats
  if (!Array.isArray(value)) return scalar(value, name, null);
  if (value.length === 0) return [];
  const first = scalarKind(scalar(value[0]!, name, 0));
  let odd = -1;
  let numbers = true;
  for (let i = 1; i < value.length; i++) {
    const kind = scalarKind(scalar(value[i]!, name, i));
    if (kind !== first && odd < 0) odd = i;
    numbers &&= kind === "int" || kind === "float";
  }
  if (odd < 0) return value as Entry;
  if (numbers && (first === "int" || first === "float")) {
    return (value as (bigint | number)[]).map((v) => Number(v));
  }
  throw metadataError(
    "metadata-mixed-list",
    `list mixes ${PLURALS[first]} and ${PLURALS[scalarKind(value[odd] as Scalar)]} ` +
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

/** @internal metadata-invalid-name unless `name` follows the schema's name grammar. */
export function checkName(name: string, tables: SchemaTables): void {
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

/** @internal The schema's type and range of one well-known name (llm-* rules). */
export function checkWellKnown(spec: WellKnownSpec, entry: Entry): void {
  const { name } = spec;
  const kind = kindOf(entry);
  if (kind !== spec.kind && !(kind === "list" && isList(spec.kind))) {
    throw metadataError(
      "llm-wrong-type",
      `${name} must be ${KIND_WORDS[spec.kind]}, got ${KIND_WORDS[kind]}`,
      pointer(name),
    );
  }
  const items = itemsOf(entry);
  if (spec.minItems !== null && items.length < spec.minItems) {
    throw metadataError(
      "llm-value-out-of-range",
      `${name} needs at least ${spec.minItems} ${spec.minItems === 1 ? "entry" : "entries"}`,
      pointer(name),
    );
  }
  const list = isListEntry(entry);
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

// The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind. A validator
// checks each rule over the values that passed 9.1 to 9.3 and names the present names that
// did not (`broken`: name -> the rule its value breaks): a rule compares what it can and
// says once (llm-rule-unchecked) which broken values it would have compared.
type Checker = (
  rule: RuleSpec,
  values: ReadonlyMap<string, Entry>,
  broken: ReadonlyMap<string, string>,
) => PtnError[];

/** @internal llm-rule-unchecked: `rule` could not compare `names` (each broken). */
export function unchecked(rule: string, names: readonly string[], broken: ReadonlyMap<string, string>): PtnError {
  const which = names.map((n) => `${n} (${broken.get(n)})`).join(", ");
  return metadataError(
    "llm-rule-unchecked",
    `${rule} was not checked for ${which}: fix ${names.length === 1 ? "that value" : "those values"} and validate again`,
    pointer(names[0]!),
  );
}

/** @internal */
export const KIND_CHECKERS: Record<RuleSpec["kind"], Checker> = {
  /** All of `names` or none; `required-by`, when present, requires all of them. Presence
   * only: a broken value is present, so this rule is always checked. */
  together(rule, values, broken) {
    const has = (n: string): boolean => values.has(n) || broken.has(n);
    const present = rule.names.filter(has);
    const missing = rule.names.filter((n) => !has(n));
    const triggered = rule.requiredBy !== undefined && has(rule.requiredBy);
    if (missing.length === 0 || (present.length === 0 && !triggered)) return [];
    const why = present.length > 0 ? present.join(", ") : rule.requiredBy;
    return [
      metadataError(
        rule.id,
        `${missing.join(", ")} missing while ${why} present; ` +
          `give all of ${rule.names.join(", ")} or none`,
        pointer(missing[0]!),
      ),
    ];
  },

  /** Present lists of `names` have one length, equal to `length-name` when present. */
  "equal-length"(rule, values, broken) {
    const out: PtnError[] = [];
    const lengths = rule.names
      .filter((n) => values.has(n))
      .map((n) => [n, lengthOf(values.get(n)!)] as const);
    if (lengths.length > 0) {
      const count = rule.lengthName === undefined ? undefined : values.get(rule.lengthName);
      let expected: Scalar;
      let source: string;
      if (count !== undefined && !isListEntry(count)) {
        expected = count;
        source = `${rule.lengthName} = ${text(expected)}`;
      } else {
        expected = lengths[0]![1];
        source = `${lengths[0]![0]} has ${expected}`;
      }
      const wrong = lengths.find(([, length]) => !equal(length, expected));
      if (wrong !== undefined) {
        const [name, length] = wrong;
        out.push(
          metadataError(
            rule.id,
            `${name} has ${length} ${length === 1 ? "entry" : "entries"} but ${source}; give one entry per cache`,
            pointer(name),
          ),
        );
      }
    }
    // Each present input is compared with every other: a broken one alone with nothing.
    const inputs = [...rule.names, ...(rule.lengthName === undefined ? [] : [rule.lengthName])];
    const bad = inputs.filter((n) => broken.has(n));
    if (bad.length > 0 && inputs.filter((n) => values.has(n) || broken.has(n)).length >= 2) {
      out.push(unchecked(rule.id, bad, broken));
    }
    return out;
  },

  /** Each value (or list item) of `names` is below the value of `bound`, when both exist. */
  "less-than"(rule, values, broken) {
    const out: PtnError[] = [];
    const boundName = rule.bound!;
    const bound = values.get(boundName);
    if (bound !== undefined && !isListEntry(bound)) {
      const error = firstNotBelow(rule.id, rule.names, values, boundName, bound);
      if (error !== null) out.push(error);
    }
    // Each name is compared with the bound only.
    const present = rule.names.filter((n) => values.has(n) || broken.has(n));
    const bad = present.filter((n) => broken.has(n));
    if (broken.has(boundName) && present.length > 0) out.push(unchecked(rule.id, [...bad, boundName], broken));
    else if (values.has(boundName) && bad.length > 0) out.push(unchecked(rule.id, bad, broken));
    return out;
  },
};

function firstNotBelow(
  rule: string,
  names: readonly string[],
  values: ReadonlyMap<string, Entry>,
  boundName: string,
  limit: Scalar,
): PtnError | null {
  for (const name of names) {
    const entry = values.get(name);
    if (entry === undefined) continue;
    const list = isListEntry(entry);
    const items = itemsOf(entry);
    for (let i = 0; i < items.length; i++) {
      if (!less(items[i]!, limit)) {
        const label = list ? `${name}[${i}]` : name;
        return metadataError(
          rule,
          `${label} = ${text(items[i]!)} is not below ${boundName} = ${text(limit)}`,
          list ? pointer(name, i) : pointer(name),
        );
      }
    }
  }
  return null;
}

/** Check every rule of spec chapter 9 on a parsed document; return the values. */
function validate(document: PackedValue, tables: SchemaTables): Map<string, Entry> {
  if (!(document instanceof Map)) {
    const type =
      document === null
        ? "null"
        : Array.isArray(document) || document instanceof NumberList
          ? "list"
          : scalarKind(document);
    throw metadataError("metadata-not-object", `metadata must be a JSON object, got ${type}`, "");
  }
  // The parser's own map takes the checked values in place (one map, not two; setting an
  // existing name keeps the document order).
  const values = document as Map<string, unknown> as Map<string, Entry>;
  for (const [name, raw] of document) {
    checkName(name, tables);
    values.set(name, entryOf(raw, name));
  }
  for (const spec of tables.wellKnown) {
    const entry = values.get(spec.name);
    if (entry !== undefined) checkWellKnown(spec, entry);
  }
  const none = new Map<string, string>();
  for (const rule of tables.rules) {
    const error = KIND_CHECKERS[rule.kind](rule, values, none)[0];
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
    const document = parseJsonPacked(input, { member: METADATA_MEMBER });
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
    return kindOf(this.#require(name));
  }

  /** The value (a copy for lists); metadata-missing-name if absent. */
  value(name: string): Value {
    return valueOf(this.#require(name));
  }

  /** An integer (never a float or a bool); optional bounds for the caller's own range. */
  metadataInt(name: string, range: IntRange = {}): bigint {
    const value = this.#read(name, ["int"], "int") as bigint;
    return this.#bounded(name, [value], range)[0]!;
  }

  /** A list of integers (or `[]`). */
  metadataInts(name: string, range: IntRange = {}): bigint[] {
    const value = valueOf(this.#read(name, ["ints", "list"], "ints")) as bigint[];
    return this.#bounded(name, value, range);
  }

  /** A float; an integer is accepted and converted. */
  metadataFloat(name: string): number {
    return Number(this.#read(name, ["float", "int"], "float") as number | bigint);
  }

  /** A list of numbers (a float list, an integer list or `[]`). */
  metadataFloats(name: string): number[] {
    const entry = this.#read(name, ["floats", "ints", "list"], "floats");
    if (entry instanceof NumberList) return Array.from(entry.values);
    return (entry as (number | bigint)[]).map((v) => Number(v));
  }

  metadataStr(name: string): string {
    return this.#read(name, ["str"], "str") as string;
  }

  metadataStrs(name: string): string[] {
    return (this.#read(name, ["strs", "list"], "strs") as string[]).slice();
  }

  metadataBool(name: string): boolean {
    return this.#read(name, ["bool"], "bool") as boolean;
  }

  metadataBools(name: string): boolean[] {
    return (this.#read(name, ["bools", "list"], "bools") as boolean[]).slice();
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
    const kind = kindOf(entry);
    if (!accepted.includes(kind)) {
      throw metadataError(
        "metadata-wrong-kind",
        `${name} is ${KIND_WORDS[kind]}, not ${KIND_WORDS[wanted]}`,
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
