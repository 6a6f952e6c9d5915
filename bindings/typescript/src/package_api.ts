// The shapes the package validator speaks in: findings and reports as `ptn validate --json`
// prints them (schema/report.schema.json), and a package described as `ptn inspect --json`
// describes it.

/** "error" invalidates a package, "warning" does not. */
export type Severity = "error" | "warning";

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

/** A package described as `ptn inspect --json` does; parts that could not be read are null. */
export interface Inspection {
  path: string;
  /** Readable members, by header offset; null when no zip directory could be read. */
  members: MemberRow[] | null;
  /** program.ptg: its size and the 4 identifier bytes (latin-1); null when absent. */
  program: { size: number; identifier: string } | null;
  /** Readable constants then aliases; null when program.safetensors is absent or unreadable. */
  tensors: TensorRow[] | null;
  /** null when metadata.json is absent or invalid. */
  metadata: MetadataRow[] | null;
  /** null when tensors is null. */
  totals: { constants: number; constant_bytes: number; dedup_saved_bytes: number } | null;
}

/** What the schema-dependent part of the binding gives the validator (see package.ts). */
export interface PackageTables {
  /** Every rule id of spec.md with the severity its heading gives. */
  readonly severity: Readonly<Record<string, Severity>>;
  /** Parse metadata.json (throws PtnError); the generated Metadata.parse. */
  parseMetadata(bytes: Uint8Array): {
    names(): string[];
    kind(name: string): string;
    value(name: string): unknown;
  };
  /** Well-known metadata names in schema order, with their descriptions. */
  readonly wellKnown: readonly { readonly name: string; readonly description: string }[];
}
