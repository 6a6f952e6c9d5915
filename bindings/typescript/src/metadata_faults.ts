// Every fault of one metadata.json document, for validators (spec 9.4): as
// ptn.metadata.faults and ptn.metadata.near do it in Python. Metadata.parse stops at the
// first broken rule; a validator's user wants them all: per name in document order its
// first fault, then each well-known value out of kind or range, then each cross-field rule
// broken among the values that passed; then the warnings: each rule a broken value kept
// from comparing (llm-rule-unchecked), and metadata-near-well-known for names within two
// edits (case aside) of a well-known name. ruleInputs hands the well-known values on to the
// rules of the metadata against the program (agreement.ts).

import {
  checkName,
  checkWellKnown,
  entryOf,
  type Entry,
  KIND_CHECKERS,
  METADATA_MEMBER,
  type SchemaTables,
} from "./metadata_core.js";
import { repr } from "./pyrepr.js";
import { parseJsonPacked, PtnError, pointer } from "./strict_json.js";

const NEAR = "metadata-near-well-known";
const MAX_EDITS = 2;

/** Levenshtein distance of `a` and `b`, or `limit + 1` when it exceeds `limit`. */
export function editDistance(a: string, b: string, limit = MAX_EDITS): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    if (Math.min(...current) > limit) return limit + 1;
    previous = current;
  }
  return Math.min(previous[b.length]!, limit + 1);
}

/** The well-known names `name` is near (the closest, schema order); [] if none. */
export function nearestWellKnown(name: string, tables: SchemaTables): string[] {
  const known = tables.wellKnown.map((w) => w.name);
  if (known.includes(name)) return [];
  const lowered = name.toLowerCase();
  const distances = known.map((k) => editDistance(lowered, k));
  const best = Math.min(...distances);
  return best <= MAX_EDITS ? known.filter((_, i) => distances[i] === best) : [];
}

/** One metadata-near-well-known (a warning) per name near a well-known one. */
export function nearWarnings(names: Iterable<string>, tables: SchemaTables): PtnError[] {
  const out: PtnError[] = [];
  for (const name of names) {
    const nearest = nearestWellKnown(name, tables);
    if (nearest.length > 0) {
      out.push(
        new PtnError(
          NEAR,
          `${repr(name)} is not a well-known name but is close to ${nearest.map(repr).join(" or ")}; ` +
            "runtimes ignore it: rename it if it is a misspelling",
          { member: METADATA_MEMBER, pointer: pointer(name) },
        ),
      );
    }
  }
  return out;
}

/** The well-known names of a document, as the rules between names take them. */
export interface RuleInputs {
  /** The well-known names whose value passed spec 9.1 to 9.3 (as the metadata stores them). */
  readonly values: ReadonlyMap<string, unknown>;
  /** The well-known names present whose value breaks them -> the rule it breaks. */
  readonly broken: ReadonlyMap<string, string>;
}

/** Each well-known name of a parsed document, its value checked (spec 9.2 and 9.3). */
export function ruleInputs(document: ReadonlyMap<string, unknown>, tables: SchemaTables): RuleInputs {
  const values = new Map<string, Entry>();
  const broken = new Map<string, string>();
  for (const spec of tables.wellKnown) {
    if (!document.has(spec.name)) continue;
    try {
      const entry = entryOf(document.get(spec.name) as never, spec.name);
      checkWellKnown(spec, entry);
      values.set(spec.name, entry);
    } catch (err) {
      if (!(err instanceof PtnError)) throw err;
      broken.set(spec.name, err.rule);
    }
  }
  return { values, broken };
}

/** The well-known values of metadata.json's bytes; null when it is no JSON object. */
export function documentInputs(input: Uint8Array, tables: SchemaTables): RuleInputs | null {
  let document: unknown;
  try {
    document = parseJsonPacked(input, { member: METADATA_MEMBER });
  } catch (err) {
    if (err instanceof PtnError) return null;
    throw err;
  }
  return document instanceof Map ? ruleInputs(document, tables) : null;
}

/**
 * Every fault of a document Metadata.parse refused (errors first, the first being the one
 * it threw; then the warnings). A syntax error or a top-level non-object is one fault.
 */
export function metadataFaults(input: Uint8Array, tables: SchemaTables, first: PtnError): PtnError[] {
  if (first.rule.startsWith("json-") || first.rule === "metadata-not-object") return [first];
  const document = parseJsonPacked(input, { member: METADATA_MEMBER }) as Map<string, never>;
  const errors: PtnError[] = [];
  const shaped = new Map<string, Entry>();
  const good: string[] = [];
  const known = new Set(tables.wellKnown.map((w) => w.name));
  for (const [name, raw] of document) {
    try {
      checkName(name, tables);
      good.push(name);
      const entry = entryOf(raw, name);
      if (known.has(name)) shaped.set(name, entry);
    } catch (err) {
      if (!(err instanceof PtnError)) throw err;
      errors.push(err);
    }
  }
  for (const spec of tables.wellKnown) {
    const entry = shaped.get(spec.name);
    if (entry === undefined) continue;
    try {
      checkWellKnown(spec, entry);
    } catch (err) {
      if (!(err instanceof PtnError)) throw err;
      errors.push(err);
    }
  }
  const inputs = ruleInputs(document, tables);
  const warnings: PtnError[] = [];
  for (const rule of tables.rules) {
    const values = inputs.values as ReadonlyMap<string, Entry>;
    for (const error of KIND_CHECKERS[rule.kind](rule, values, inputs.broken)) {
      (error.rule === "llm-rule-unchecked" ? warnings : errors).push(error);
    }
  }
  return [...errors, ...warnings, ...nearWarnings(good, tables)];
}
