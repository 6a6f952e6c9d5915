"""TypeScript target: an ES-module package for Node 20 (strict tsc), generated from the schema.

Layout under generated/typescript/ (``npm ci && npx tsc`` builds ``dist/``):

- ``src/metadata.ts``: generated from the schema: the tables and ``Metadata`` with one
  accessor per well-known name (``get_windows`` -> ``windows()``), plus the
  ``WellKnownMetadata`` interface; ``src/index.ts``, which re-exports it with the runtime;
- ``src/program_layout.ts``: schema/program.layout.json as the table the program
  verifier (``program.ts``) walks (tools/codegen/program_layout.py);
- ``src/operator_table.ts``: schema/operators.json, ptn's operator table, in the compact
  form the operator rules (``program_operators.ts``) read
  (tools/codegen/typescript_operators.py);
- ``src/rules.ts``: every rule id of spec.md with its severity (from the rule headings);
  ``src/package.ts``: ``validatePackage`` and ``inspectPackage`` bound to the generated
  metadata tables and rule table, ``readMetadata`` and ``readPackageMetadata`` to the
  generated ``Metadata``;
- the other ``src/*.ts`` (strict JSON, metadata core, byte sources, the package
  validator, the Node-only entry ``node.ts``), ``bin/ptn-validate.mjs``,
  ``conformance_runner.mjs``, ``tsconfig.json``, ``package.json`` and
  ``package-lock.json``: the runtime package of ``bindings/typescript/`` (where it is
  edited), copied.

``package.json`` pins one devDependency, ``typescript``; after changing it, run
``npm install --package-lock-only`` in ``bindings/typescript/`` and regenerate
(tests/test_bindings.py checks that the two agree).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tools.codegen.common import (
    SCHEMA_SOURCE,
    base_kind,
    check_expressible,
    doc_line,
    enum_members,
    float_bounds,
    header,
    int_bounds,
    kind_doc,
    runtime_copies,
    unique_accessors,
)
from tools.codegen.program_layout import program_layout_output
from tools.codegen.rule_ids import rule_headings
from tools.codegen.schema_info import SchemaInfo, WellKnown
from tools.codegen.typescript_operators import operator_table_output

# The runtime of bindings/typescript/ copied with a DO-NOT-EDIT line (tsc reads
# tsconfig.json with comments); package.json and its lock file are JSON without comments.
TS_RUNTIME = (
    "src/strict_json.ts",
    "src/metadata_core.ts",
    "src/metadata_faults.ts",
    "src/llm_agreement.ts",
    "src/globals.d.ts",
    "src/byte_source.ts",
    "src/zip_reader.ts",
    "src/budget.ts",
    "src/sha256.ts",
    "src/pyrepr.ts",
    "src/program.ts",
    "src/program_constants.ts",
    "src/program_methods.ts",
    "src/program_values.ts",
    "src/program_operators.ts",
    "src/program_calls.ts",
    "src/program_effects.ts",
    "src/package_api.ts",
    "src/package_core.ts",
    "src/package_metadata.ts",
    "src/node.ts",
    "src/node_fs.d.ts",
    "bin/ptn-validate.mjs",
    "conformance_runner.mjs",
    "tsconfig.json",
)

# Members of MetadataBase / Metadata an accessor must not shadow.
TS_MEMBERS = frozenset(
    """has size names kind value metadataInt metadataInts metadataFloat metadataFloats
    metadataStr metadataStrs metadataBool metadataBools optionalInt optionalInts
    optionalFloat optionalFloats optionalStr optionalStrs optionalBool optionalBools
    wellKnown parse constructor toString valueOf hasOwnProperty isPrototypeOf
    propertyIsEnumerable toLocaleString""".split()
)
_TS_TYPE = {
    "bool": "boolean",
    "int": "bigint",
    "float": "number",
    "str": "string",
    "bools": "boolean[]",
    "ints": "bigint[]",
    "floats": "number[]",
    "strs": "string[]",
}
_OPTIONAL = {
    "bool": "optionalBool",
    "int": "optionalInt",
    "float": "optionalFloat",
    "str": "optionalStr",
    "bools": "optionalBools",
    "ints": "optionalInts",
    "floats": "optionalFloats",
    "strs": "optionalStrs",
}
_RULE_KEYS = {"length-name": "lengthName", "bound": "bound", "required-by": "requiredBy"}


def camel(ident: str) -> str:
    """``max_context_len`` -> ``maxContextLen`` (leading underscores stay)."""
    lead = ident[: len(ident) - len(ident.lstrip("_"))]
    first, *rest = ident[len(lead) :].split("_")
    return lead + first + "".join(part[:1].upper() + part[1:] for part in rest)


def ts_string(text: str) -> str:
    return json.dumps(text)  # ASCII-only, a valid JavaScript string literal


def _ts_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}n"
    if isinstance(value, float):
        return repr(value)
    return ts_string(value)


def _jsdoc(text: str) -> str:
    return doc_line(text).replace("*/", "*\\/")


def _well_known_entry(w: WellKnown) -> str:
    kind = base_kind(w.kind)
    low: Any = None
    high: Any = None
    if kind == "int":
        low, high = int_bounds(w)
    elif kind == "float":
        low, high = float_bounds(w)
    members = enum_members(w)
    enum = "null" if members is None else "[" + ", ".join(_ts_scalar(m) for m in members) + "]"
    min_items = "null" if w.min_items is None else str(w.min_items)
    return (
        "    {\n"
        f"      name: {ts_string(w.name)},\n"
        f'      kind: "{w.kind}",\n'
        f"      minimum: {_ts_scalar(low)},\n"
        f"      maximum: {_ts_scalar(high)},\n"
        f"      enum: {enum},\n"
        f"      minItems: {min_items},\n"
        f"      description: {ts_string(w.description)},\n"
        "    },"
    )


def _rule_entry(rule: dict[str, Any]) -> str:
    lines = [
        "    {",
        f"      id: {ts_string(rule['id'])},",
        f"      kind: {ts_string(rule['kind'])},",
        f"      names: [{', '.join(ts_string(n) for n in rule['names'])}],",
    ]
    lines += [f"      {key}: {ts_string(rule[k])}," for k, key in _RULE_KEYS.items() if k in rule]
    return "\n".join([*lines, "    },"])


def _property(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", name) else ts_string(name)


def emit_metadata_module(info: SchemaInfo) -> str:
    check_expressible(info)
    accessors = unique_accessors(info, camel, TS_MEMBERS)
    known = "\n".join(_well_known_entry(w) for w in info.well_known)
    rules = "\n".join(_rule_entry(r) for r in info.rules)
    fields = []
    methods = []
    for w in info.well_known:
        kind_text = kind_doc(w)
        fields.append(
            f"  /** {_jsdoc(w.description)} ({kind_text}) */\n"
            f"  readonly {_property(w.name)}?: {_TS_TYPE[w.kind]};"
        )
        methods.append(
            f"  /** `{w.name}` ({kind_text}): {_jsdoc(w.description)} undefined when absent. */\n"
            f"  {accessors[w.name]}(): {_TS_TYPE[w.kind]} | undefined {{\n"
            f"    return this.{_OPTIONAL[w.kind]}({ts_string(w.name)});\n"
            "  }\n"
        )
    return (
        header("//", SCHEMA_SOURCE)
        + f"""// Metadata: metadata.json of a .ptn package (spec chapter 9) for TypeScript.

import {{ MetadataBase, type SchemaTables }} from "./metadata_core.js";

export const METADATA_SCHEMA_ID = {ts_string(info.schema_id)};

/** The name grammar, well-known names and x-ptn-rules of the metadata schema. */
export const METADATA_TABLES: SchemaTables = {{
  schemaId: {ts_string(info.schema_id)},
  namePattern: {ts_string(info.name_pattern)},
  nameMaxChars: {info.name_max_bytes},
  wellKnown: [
{known}
  ],
  rules: [
{rules}
  ],
}};

/** The well-known names with their TypeScript types; absent names are absent. */
export interface WellKnownMetadata {{
{chr(10).join(fields)}
}}

/** Validated metadata.json contents; immutable. Every failure is a PtnError. */
export class Metadata extends MetadataBase {{
  private constructor(input: string | Uint8Array) {{
    super(input, METADATA_TABLES);
  }}

  /** Parse strict JSON (spec section 8) and check chapter 9; throws PtnError. */
  static parse(input: string | Uint8Array): Metadata {{
    return new Metadata(input);
  }}

  /** The well-known names present, with their values. */
  wellKnown(): WellKnownMetadata {{
    const out: Record<string, unknown> = {{}};
    for (const spec of METADATA_TABLES.wellKnown) {{
      if (this.has(spec.name)) out[spec.name] = this.value(spec.name);
    }}
    return out as WellKnownMetadata;
  }}

{chr(10).join(methods)}}}

/** Same as Metadata.parse. */
export function parseMetadata(input: string | Uint8Array): Metadata {{
  return Metadata.parse(input);
}}
"""
    )


def emit_rules_module(spec_text: str) -> str:
    """src/rules.ts: every rule id of spec.md with the severity its heading gives."""
    entries = "\n".join(
        f"  {ts_string(rule)}: {ts_string(sev)}," for rule, sev in rule_headings(spec_text)
    )
    title = re.search(r"^# .*specification ([0-9]+\.[0-9]+\.[0-9]+)$", spec_text, re.M)
    if title is None:
        raise ValueError("spec.md's title line names no version (`# ... specification X.Y.Z`)")
    return (
        header("//", "spec.md")
        + "// Every rule id of spec.md (its rule headings), in spec order.\n\n"
        + 'import type { Severity } from "./package_api.js";\n\n'
        + "/** The version of spec.md (its title line): `spec_version` of a report. */\n"
        + f"export const SPEC_VERSION = {ts_string(title.group(1))};\n\n"
        + "/** Rule id -> the severity its heading in spec.md gives. */\n"
        + f"export const RULE_SEVERITY: Readonly<Record<string, Severity>> = {{\n{entries}\n}};\n"
    )


PACKAGE_MODULE = """// validatePackage and inspectPackage, bound to the schema and spec.md tables;
// readMetadata and readPackageMetadata, bound to the generated Metadata.

import { Metadata, METADATA_TABLES } from "./metadata.js";
import { documentInputs, metadataFaults, nearWarnings } from "./metadata_faults.js";
import { OPERATOR_TABLE } from "./operator_table.js";
import { packageFunctions } from "./package_core.js";
import { metadataBytes, PackageMetadata, type PackageInput } from "./package_metadata.js";
import { PROGRAM_LAYOUT } from "./program_layout.js";
import { RULE_SEVERITY } from "./rules.js";

/**
 * validatePackage(src, {deep, onProgress}): the report of `ptn validate` for one package
 * (fast by default: headers only; deep adds the CRC-32 of every member).
 * inspectPackage(src, opts): the same report, and the package described as `ptn inspect
 * --json` describes it. Neither throws for the file's content: every fault is a finding.
 */
export const { validatePackage, inspectPackage } = packageFunctions({
  severity: RULE_SEVERITY,
  parseMetadata: (bytes) => Metadata.parse(bytes),
  metadataFaults: (bytes, first) => metadataFaults(bytes, METADATA_TABLES, first),
  nearWarnings: (names) => nearWarnings(names, METADATA_TABLES),
  ruleInputs: (bytes) => documentInputs(bytes, METADATA_TABLES),
  wellKnown: METADATA_TABLES.wellKnown,
  programLayout: PROGRAM_LAYOUT,
  operatorTable: OPERATOR_TABLE,
});

/**
 * The package's metadata.json, parsed and checked (spec chapters 8 and 9); null when it has
 * none. Reads the zip directory and that member only (a few KiB of a URL). Throws PtnError:
 * the container's first error, the member's own, or ptn-io-error.
 */
export async function readMetadata(src: PackageInput): Promise<Metadata | null> {
  const bytes = await metadataBytes(src);
  return bytes === null ? null : Metadata.parse(bytes);
}

/**
 * readMetadata's result with the typed reads of a package: `metadataInt(name)`,
 * `metadataInts(name)`, ... (metadata-missing-name for every name when the package has
 * no metadata.json).
 */
export async function readPackageMetadata(src: PackageInput): Promise<PackageMetadata<Metadata>> {
  return new PackageMetadata(await readMetadata(src));
}
"""


def package_json(source: Path) -> str:
    """bindings/typescript/package.json with a first member saying where it is edited."""
    package = json.loads(source.read_text(encoding="utf-8"))
    note = header("", "bindings/typescript/package.json").strip()
    return json.dumps({"//": note, **package}, indent=2) + "\n"


def typescript_outputs(info: SchemaInfo, root: Path) -> dict[str, str]:
    """Path relative to generated/ -> text, for the TypeScript target of the checkout ``root``."""
    source = root / "bindings" / "typescript"
    outputs = runtime_copies(root, "typescript", TS_RUNTIME)
    outputs["typescript/src/metadata.ts"] = emit_metadata_module(info)
    outputs["typescript/src/index.ts"] = (
        header("//", "tools/codegen/typescript.py")
        + 'export * from "./strict_json.js";\n'
        + 'export * from "./metadata_core.js";\n'
        + 'export * from "./metadata.js";\n'
        + 'export * from "./byte_source.js";\n'
        + 'export * from "./package_api.js";\n'
        + 'export { crc32 } from "./zip_reader.js";\n'
        + 'export * from "./sha256.js";\n'
        + 'export * from "./rules.js";\n'
        + 'export * from "./package.js";\n'
        + 'export { PackageMetadata, type PackageInput } from "./package_metadata.js";\n'
        + 'export { readProgram, Verifier } from "./program.js";\n'
        + 'export type { Decoded, LayoutField, ProgramLayout, UnionValue } from "./program.js";\n'
        + "export type { BufferRow, ConstantRow, MethodRow, ValueRow } "
        + 'from "./program_methods.js";\n'
        + 'export { PROGRAM_LAYOUT } from "./program_layout.js";\n'
        + 'export { OperatorTable, operatorTable } from "./program_operators.js";\n'
        + "export type { AllowedValue, OperatorTableSource, Param as OperatorParam, "
        + 'Return as OperatorReturn, Schema as OperatorSchema } from "./program_operators.js";\n'
        + 'export { OPERATOR_TABLE } from "./operator_table.js";\n'
    )
    outputs["typescript/src/program_layout.ts"] = program_layout_output(root)
    outputs["typescript/src/operator_table.ts"] = operator_table_output(root)
    outputs["typescript/src/rules.ts"] = emit_rules_module(
        (root / "spec.md").read_text(encoding="utf-8")
    )
    outputs["typescript/src/package.ts"] = (
        header("//", "tools/codegen/typescript.py") + PACKAGE_MODULE
    )
    outputs["typescript/package.json"] = package_json(source / "package.json")
    # npm's own JSON, verbatim: no room for a comment.
    outputs["typescript/package-lock.json"] = (source / "package-lock.json").read_text(
        encoding="utf-8"
    )
    return outputs
