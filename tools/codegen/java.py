"""Java target: a Maven project (Java 11, JDK only) generated from the schema.

Layout under generated/java/ (``mvn package`` builds ``target/ptn-<version>.jar``):

- ``src/main/java/dev/ptn/Metadata.java``: generated from the schema: the tables
  (name grammar, well-known names, x-ptn-rules) and ``Metadata`` with one accessor per
  well-known name (``get_windows`` -> ``windows()``, null when absent);
- ``src/main/java/dev/ptn/Rules.java``: every rule id of spec.md with its severity;
- ``src/main/java/dev/ptn/ProgramLayout.java``: schema/program.layout.json as the tables
  the program stage walks (``tools/codegen/java_program.py``);
- ``src/main/java/dev/ptn/OperatorTableText.java``: schema/operators.json, ptn's operator
  table, encoded for the runtime's ``OperatorTable`` (``tools/codegen/java_operators.py``);
- the other sources, the JUnit tests and ``pom.xml``: the runtime of ``bindings/java/``
  (where it is edited), copied with a DO-NOT-EDIT first line.
"""

from __future__ import annotations

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
    unique_accessors,
)
from tools.codegen.java_operators import java_operator_outputs
from tools.codegen.java_program import java_program_outputs
from tools.codegen.rule_ids import rule_headings
from tools.codegen.schema_info import SchemaInfo, WellKnown
from tools.codegen.typescript import camel

JAVA_PACKAGE_DIR = "src/main/java/dev/ptn"
JAVA_TEST_DIR = "src/test/java/dev/ptn"

# Members of MetadataBase/Object and Java keywords an accessor must not take.
JAVA_RESERVED = frozenset(
    """has size names kind value metadataInt metadataInts metadataFloat metadataFloats
    metadataStr metadataStrs metadataBool metadataBools optionalInt optionalInts
    optionalFloat optionalFloats optionalStr optionalStrs optionalBool optionalBools
    parse tables getClass hashCode equals toString notify notifyAll wait clone finalize
    abstract assert boolean break byte case catch char class const continue default do
    double else enum extends final finally float for goto if implements import instanceof
    int interface long native new package private protected public return short static
    strictfp super switch synchronized this throw throws transient try void volatile while
    true false null var record yield""".split()
)
_JAVA_TYPE = {
    "bool": "Boolean",
    "int": "Long",
    "float": "Double",
    "str": "String",
    "bools": "boolean[]",
    "ints": "long[]",
    "floats": "double[]",
    "strs": "List<String>",
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
_SIMPLE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def java_string(text: str) -> str:
    """A Java string literal: ASCII only; controls as octal escapes (a \\u escape of a line
    break would end the literal, since javac reads \\u escapes before anything else)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        elif code < 0x80:
            out.append(char)
        else:
            out += [f"\\u{unit:04x}" for unit in _utf16(char)]
    out.append('"')
    return "".join(out)


def _utf16(char: str) -> list[int]:
    data = char.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[k : k + 2], "big") for k in range(0, len(data), 2)]


def _java_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "Boolean.TRUE" if value else "Boolean.FALSE"
    if isinstance(value, int):
        return f"Long.valueOf({value}L)"
    if isinstance(value, float):
        return f"Double.valueOf({value!r})"
    return java_string(value)


def _javadoc(text: str) -> str:
    return doc_line(text).replace("*/", "*&#47;").replace("@", "{@literal @}")


def _well_known_entry(w: WellKnown) -> str:
    kind = base_kind(w.kind)
    low: Any = None
    high: Any = None
    if kind == "int":
        low, high = int_bounds(w)
    elif kind == "float":
        low, high = float_bounds(w)
    members = enum_members(w)
    choices = (
        "null"
        if members is None
        else "Arrays.<Object>asList(" + ", ".join(_java_scalar(m) for m in members) + ")"
    )
    min_items = "null" if w.min_items is None else f"Integer.valueOf({w.min_items})"
    return (
        "          new SchemaTables.WellKnown(\n"
        f"              {java_string(w.name)},\n"
        f'              "{w.kind}",\n'
        f"              {_java_scalar(low)},\n"
        f"              {_java_scalar(high)},\n"
        f"              {choices},\n"
        f"              {min_items},\n"
        f"              {java_string(w.description)})"
    )


def _rule_entry(rule: dict[str, Any]) -> str:
    names = ", ".join(java_string(n) for n in rule["names"])
    optional = [
        java_string(rule[k]) if k in rule else "null"
        for k in ("length-name", "bound", "required-by")
    ]
    return (
        "          new SchemaTables.Rule(\n"
        f"              {java_string(rule['id'])},\n"
        f"              {java_string(rule['kind'])},\n"
        f"              Arrays.asList({names}),\n"
        f"              {', '.join(optional)})"
    )


def emit_metadata_class(info: SchemaInfo) -> str:
    check_expressible(info)
    accessors = unique_accessors(info, camel, JAVA_RESERVED)
    known = ",\n".join(_well_known_entry(w) for w in info.well_known)
    rules = ",\n".join(_rule_entry(r) for r in info.rules)
    methods = []
    for w in info.well_known:
        methods.append(
            f"  /** {java_string(w.name)[1:-1]} ({kind_doc(w)}): {_javadoc(w.description)}"
            " Null when absent. */\n"
            f"  public {_JAVA_TYPE[w.kind]} {accessors[w.name]}() {{\n"
            f"    return {_OPTIONAL[w.kind]}({java_string(w.name)});\n"
            "  }\n"
        )
    return (
        header("//", SCHEMA_SOURCE)
        + f"""package dev.ptn;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * metadata.json of a .ptn package (spec chapter 9): strict JSON (section 8), every rule of
 * chapter 9, and one accessor per well-known name of the schema (null when absent). Immutable;
 * every failure is a {{@link PtnException}} naming the rule id of spec.md.
 */
public final class Metadata extends MetadataBase {{
  /** The $id of the schema this class was generated from. */
  public static final String SCHEMA_ID = {java_string(info.schema_id)};

  /** The name grammar, well-known names and x-ptn-rules of the metadata schema. */
  public static final SchemaTables TABLES =
      new SchemaTables(
          SCHEMA_ID,
          {java_string(info.name_pattern)},
          {info.name_max_bytes},
          Arrays.asList(
{known}),
          {"Arrays.asList(" + chr(10) + rules + ")" if rules else "Collections.emptyList()"});

  private Metadata(byte[] document) {{
    super(document, TABLES);
  }}

  private Metadata(String document) {{
    super(document, TABLES);
  }}

  /** Parse strict JSON bytes (UTF-8) and check chapter 9; throws PtnException. */
  public static Metadata parse(byte[] document) {{
    return new Metadata(document);
  }}

  /** Parse text (which must have a UTF-8 form) and check chapter 9; throws PtnException. */
  public static Metadata parse(String document) {{
    return new Metadata(document);
  }}

  /** The well-known names of the schema, in schema order. */
  public static List<String> wellKnownNames() {{
    String[] names = new String[TABLES.wellKnown.size()];
    for (int k = 0; k < names.length; k++) names[k] = TABLES.wellKnown.get(k).name;
    return Collections.unmodifiableList(Arrays.asList(names));
  }}

{chr(10).join(methods)}}}
"""
    )


def emit_rules_class(spec_text: str) -> str:
    """Rules.java: every rule id of spec.md with the severity its heading gives."""
    entries = "\n".join(
        f"    put(map, {java_string(rule)}, {java_string(sev)});"
        for rule, sev in rule_headings(spec_text)
    )
    title = re.search(r"^# .*specification ([0-9]+\.[0-9]+\.[0-9]+)$", spec_text, re.M)
    if title is None:
        raise ValueError("spec.md's title line names no version (`# ... specification X.Y.Z`)")
    return (
        header("//", "spec.md")
        + f"""package dev.ptn;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** Every rule id of spec.md (its rule headings) with its severity, in spec order. */
public final class Rules {{
  /** The version of spec.md (its title line): spec_version of a report. */
  public static final String SPEC_VERSION = {java_string(title.group(1))};

  /** Rule id -> "error", "warning" or "advice", as the rule's heading in spec.md gives it. */
  public static final Map<String, String> SEVERITY = severities();

  private Rules() {{}}

  private static Map<String, String> severities() {{
    Map<String, String> map = new LinkedHashMap<>();
{entries}
    return Collections.unmodifiableMap(map);
  }}

  private static void put(Map<String, String> map, String rule, String severity) {{
    map.put(rule, severity);
  }}
}}
"""
    )


def _sources(root: Path, under: str) -> tuple[str, ...]:
    base = root / "bindings" / "java"
    return tuple(sorted(p.relative_to(base).as_posix() for p in (base / under).glob("*.java")))


def java_outputs(info: SchemaInfo, root: Path) -> dict[str, str]:
    """Path relative to generated/ -> text, for the Java target of the checkout ``root``."""
    base = root / "bindings" / "java"
    outputs: dict[str, str] = {}
    for rel in (*_sources(root, JAVA_PACKAGE_DIR), *_sources(root, JAVA_TEST_DIR)):
        text = (base / rel).read_text(encoding="utf-8")
        outputs[f"java/{rel}"] = header("//", f"bindings/java/{rel}") + text
    pom = header("", "bindings/java/pom.xml").strip()
    outputs["java/pom.xml"] = f"<!-- {pom} -->\n" + (base / "pom.xml").read_text(encoding="utf-8")
    outputs[f"java/{JAVA_PACKAGE_DIR}/Metadata.java"] = emit_metadata_class(info)
    outputs[f"java/{JAVA_PACKAGE_DIR}/Rules.java"] = emit_rules_class(
        (root / "spec.md").read_text(encoding="utf-8")
    )
    outputs.update(java_program_outputs(root))
    outputs.update(java_operator_outputs(root))
    return outputs
