// The shapes the package validator speaks in: findings and reports as `ptn validate --json`
// prints them (schema/report.schema.json), and a package described as `ptn inspect --json`
// describes it.

import type { RuleInputs } from "./metadata_faults.js";
import type { ProgramLayout } from "./program.js";
import type { MethodRow } from "./program_methods.js";
import type { OperatorTableSource } from "./program_operators.js";
import type { PtnError } from "./strict_json.js";

/** spec.md section 1: "error" invalidates a package; "warning" does not (a strict check fails
 * on it); "advice" (alignment, which `ptn repack` applies) fails no check. */
export type Severity = "error" | "warning" | "advice";

/** One rule violation (report schema "Finding"). */
export interface Finding {
  /** The rule id of spec.md. */
  rule: string;
  severity: Severity;
  /** The package member ("program.safetensors"...), or null for the container. */
  member: string | null;
  /** A JSON pointer into the member ("" = the whole document), or null. */
  pointer: string | null;
  message: string;
}

/** Everything found in one file (report schema "File"). */
export interface FileReport {
  path: string;
  /** No finding is an error. */
  valid: boolean;
  /** At most 100 per rule and 1,000 in all, then one summary finding per rule that had more. */
  findings: Finding[];
}

/** What the validator's callers can ask for. */
export interface ValidateOptions {
  /** Also stream the CRC-32 of every member and check BOOL bytes (reads every byte). */
  deep?: boolean;
  /** Called as the deep check advances: bytes checked so far, of `total`. */
  onProgress?: (done: number, total: number) => void;
  /** The CRC-32 the deep check uses: (data, crc so far) -> crc, as zlib.crc32. Default: the
   * binding's own (slicing-by-8, portable); in Node, `nodeCrc32` of the node entry (zlib's,
   * several times faster) is the better choice. */
  crc32?: (data: Uint8Array, crc: number) => number;
}

/** One zip member as `ptn inspect --json` lists it. */
export interface MemberRow {
  name: string;
  header_offset: number;
  data_offset: number;
  size: number;
  /** Largest power of two (at most 4096) dividing data_offset. */
  data_alignment: number;
  /** The directory's CRC-32, 8 hex digits. */
  crc32: string;
  /** The compression method (0: stored; anything else is zip-member-compressed). */
  method: number;
}

/** A part of the package that could not be read, with the finding that says why. */
export interface UnreadablePart {
  /** A member name ("program.safetensors"...), or "constant KEY" for one constant. */
  part: string;
  /** The constant's key, for a "constant KEY" part. */
  key?: string;
  rule: string;
  severity: Severity;
  member: string | null;
  pointer: string | null;
  message: string;
}

/** One constant (or alias) of program.safetensors / aliases.json. */
export interface TensorRow {
  key: string;
  dtype: string;
  shape: number[];
  bytes: number;
  /** The owner key when this key is an alias, else null. */
  alias_of: string | null;
}

/** One metadata.json entry; well-known names first (schema order), then the rest sorted. */
export interface MetadataRow {
  name: string;
  kind: string;
  /** Integers are bigint (JSON.stringify needs a replacer for them). */
  value: unknown;
  /** The schema's description of a well-known name, else null. */
  meaning: string | null;
}

/**
 * A package described as `ptn inspect --json` does, valid or not: what could be read is
 * shown, and `unreadable` lists each part that could not (a compressed or encrypted member,
 * a header or document that does not parse, a constant whose entry breaks a rule).
 */
export interface Inspection {
  path: string;
  /** No finding is an error. */
  valid: boolean;
  /** Members, by header offset (faulty ones too); null when no zip directory could be read. */
  members: MemberRow[] | null;
  /** program.ptg: its size and the 4 identifier bytes (latin-1); null when absent or unreadable. */
  program: { size: number; identifier: string } | null;
  /** Each method: inputs, outputs, bound constants, mutable buffers; null when the program
   * cannot be decoded (absent, unreadable, refused by the verifier, an unknown version). */
  methods: MethodRow[] | null;
  /** Readable constants then aliases, sorted by key; null when program.safetensors is absent or
   * unreadable. A constant whose entry (or whose owner's) breaks a rule is left out and listed
   * under `unreadable`. */
  tensors: TensorRow[] | null;
  /** metadata.json as parsed, values that break a rule included (their findings say what is
   * wrong); null when it is absent, or not a JSON object. Kinds are those of `ptn inspect`
   * ("?" for a value that is no metadata value at all). */
  metadata: MetadataRow[] | null;
  /** null when tensors is null. */
  totals: { constants: number; constant_bytes: number; dedup_saved_bytes: number } | null;
  /** The parts that could not be read: members first, then constants by key. */
  unreadable: UnreadablePart[];
  /** The findings of the check that made this inspection (the report's). */
  findings: Finding[];
}

/** What the schema-dependent part of the binding gives the validator (see package.ts). */
export interface PackageTables {
  /** The program layout (the generated program_layout.ts). */
  readonly programLayout: ProgramLayout;
  /** ptn's operator table (the generated operator_table.ts), parsed on first use. */
  readonly operatorTable: OperatorTableSource;
  /** Every rule id of spec.md with the severity its heading gives. */
  readonly severity: Readonly<Record<string, Severity>>;
  /** Parse metadata.json (throws PtnError); the generated Metadata.parse. */
  parseMetadata(bytes: Uint8Array): {
    names(): string[];
    kind(name: string): string;
    value(name: string): unknown;
  };
  /** Every fault of a metadata.json that parseMetadata refused (`first`), errors then warnings. */
  metadataFaults(bytes: Uint8Array, first: PtnError): PtnError[];
  /** The metadata-near-well-known warnings of these names. */
  nearWarnings(names: string[]): PtnError[];
  /** The well-known values of metadata.json's bytes, checked (spec 9.8 compares them with
   * the program); null when it is no JSON object. */
  ruleInputs(bytes: Uint8Array): RuleInputs | null;
  /** Well-known metadata names in schema order, with their descriptions. */
  readonly wellKnown: readonly { readonly name: string; readonly description: string }[];
}
