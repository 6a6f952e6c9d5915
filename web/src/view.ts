// What the page shows for one package: the verdict, the findings, and the parts of
// `ptn inspect --json` (members, program envelope, methods, constants, metadata, totals).

import {
  RULE_SEVERITY,
  type BufferRow,
  type FileReport,
  type Finding,
  type Inspection,
  type ValueRow,
} from "../../generated/typescript/src/index.js";
import { el, literal, size, visible } from "./dom.js";

/** Rows shown before a table is summarised behind a "show all" button. */
export const SHOWN_ROWS = 40;

declare const __SPEC_URL__: string;

/** The rule id, linked to its section of the rendered spec: the anchor of the heading
 * ``#### `rule` (severity)`` is ``rule-severity`` (ptn/cli/links.py, tools/docs_hooks.py),
 * with the severity the generated rule table gives; a rule it lacks is not linked. */
export function ruleLink(rule: string): HTMLElement {
  const severity = Object.hasOwn(RULE_SEVERITY, rule) ? RULE_SEVERITY[rule] : undefined;
  if (severity === undefined) return el("code", {}, visible(rule));
  const href = `${__SPEC_URL__}#${rule}-${severity}`;
  return el("a", { href, target: "_blank", rel: "noreferrer", class: "rule" }, el("code", {}, rule));
}

function table(caption: string, columns: string[], rows: (Node | string)[][], id: string): HTMLElement {
  const head = el("tr");
  for (const c of columns) head.append(el("th", {}, c));
  const body = el("tbody");
  const fill = (count: number): void => {
    // One fragment, appended to row by row: spreading 200,000 rows into one call's
    // arguments overflowed the stack.
    const rowsShown = document.createDocumentFragment();
    for (const cells of rows.slice(0, count)) {
      const tr = el("tr");
      for (const c of cells) tr.append(el("td", {}, c));
      rowsShown.append(tr);
    }
    body.replaceChildren(rowsShown);
  };
  fill(SHOWN_ROWS);
  const section = el("section", { id }, el("h2", {}, caption));
  section.append(el("table", {}, el("thead", {}, head), body));
  if (rows.length > SHOWN_ROWS) {
    const more = el("button", { type: "button", class: "show-all" }, `show all ${rows.length} rows`);
    const note = el("p", { class: "summary" }, `showing ${SHOWN_ROWS} of ${rows.length} rows `, more);
    more.addEventListener("click", () => {
      fill(rows.length);
      note.remove();
    });
    section.append(note);
  }
  return section;
}

function note(caption: string, id: string, text: string): HTMLElement {
  return el("section", { id }, el("h2", {}, caption), el("p", { class: "unreadable" }, text));
}

/** A part the inspection could not give: the package lacks its member, or it is unreadable
 * (with the rule that says why, when the inspection names one). */
function unreadable(caption: string, id: string, info: Inspection, member: string): HTMLElement {
  const absent = info.members !== null && !info.members.some((m) => m.name === member);
  if (absent) return note(caption, id, `the package has no ${member}`);
  const why = info.unreadable.find((u) => u.part === member);
  return note(caption, id, why ? `not readable (${why.rule}): see the findings` : "not readable: see the findings");
}

/** The parts that could not be read (members, constants), each with the rule that says why. */
function unreadableView(info: Inspection): HTMLElement | null {
  if (info.unreadable.length === 0) return null;
  return table(
    "unreadable parts",
    ["part", "rule", "why"],
    info.unreadable.map((u) => [visible(u.part), ruleLink(u.rule), visible(u.message)]),
    "unreadable",
  );
}

/** `x: F32 [1..8, 4]`, as `ptn inspect` draws a method's input, output or buffer. */
function valueText(name: string, row: ValueRow): string {
  if (row.dtype === null || row.shape === null) return visible(name);
  return `${visible(name)}: ${visible(row.dtype)} [${row.shape.map(String).join(", ")}]`;
}

function values(rows: ValueRow[], name: (row: ValueRow) => string): string {
  const most = 4;
  const lines = rows.slice(0, most).map((r) => valueText(name(r), r));
  if (rows.length > most) lines.push(`... ${rows.length - most} more`);
  return lines.join("\n");
}

/** Each method: its inputs, outputs, how many constants it binds (and mutates), its mutable
 * buffers; a note when the program is there but could not be decoded; nothing without one. */
function methodsView(info: Inspection): HTMLElement | null {
  if (info.program === null) return null;
  if (info.methods === null) return note("methods", "methods", "the program could not be decoded: see the findings");
  return table(
    "methods",
    ["name", "inputs", "outputs", "constants", "mutable buffers"],
    info.methods.map((m) => {
      const mutated = m.constants.filter((c) => c.mutated).length;
      return [
        visible(m.name),
        values(m.inputs, (r) => r.name),
        values(m.outputs, (r) => r.name),
        `${m.constants.length}${mutated ? ` (${mutated} mutated)` : ""}`,
        values(m.mutable_buffers, (r) => (r as BufferRow).fqn),
      ];
    }),
    "methods",
  );
}

/** A member's compression method as the zip format names it. */
function method(m: number): string {
  return m === 0 ? "stored" : m === 8 ? "deflate (8)" : `method ${m}`;
}

/** As `ptn validate`'s summary: errors, warnings, and advice (alignment) only when there is some. */
function counts(findings: Finding[]): string {
  const of = (severity: Finding["severity"]) => findings.filter((f) => f.severity === severity).length;
  const [errors, warnings, advice] = [of("error"), of("warning"), of("advice")];
  return (
    `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}` +
    (advice ? `, ${advice} advice` : "")
  );
}

/** True when the report says the file could not be read (ptn-io-error): nothing was checked. */
export function notChecked(report: FileReport): boolean {
  return report.findings.some((f) => f.rule === "ptn-io-error" && f.severity === "error");
}

/** The verdict line and one row per finding, in the validator's order. */
export function findingsView(report: FileReport, deep: boolean): HTMLElement {
  const mode = deep ? "deep check (every byte, CRC-32 of every member)" : "fast check (headers only)";
  // As `ptn validate` (exit 2): a file that could not be read was not checked, not invalid.
  const unread = notChecked(report);
  const verdict = el(
    "p",
    { id: "verdict", class: unread ? "unchecked" : report.valid ? "valid" : "invalid" },
    el("strong", {}, unread ? "not checked" : report.valid ? "valid" : "invalid"),
    unread
      ? " — the file could not be read. A URL is read with HTTP range requests from this page: " +
          "its server must allow them from this page's origin (CORS: Access-Control-Allow-Origin), " +
          "or download the file and drop it here."
      : ` — ${counts(report.findings)}; ${mode}`,
  );
  const section = el("section", { id: "findings" }, el("h2", {}, "findings"), verdict);
  if (report.findings.length > 0) {
    const list = el("ol", { class: "findings" });
    for (const f of report.findings) {
      const where = [f.member, f.pointer].filter((p): p is string => p !== null).map(visible).join(" ");
      list.append(
        el(
          "li",
          { class: f.severity },
          el("span", { class: "severity" }, f.severity),
          " ",
          ruleLink(f.rule),
          where ? el("span", { class: "where" }, ` [${where}]`) : null,
          " ",
          el("span", { class: "message" }, visible(f.message)),
        ),
      );
    }
    section.append(list);
  }
  return section;
}

/** Members, program envelope, constants, metadata, the parts that could not be read (each
 * with its rule), and totals; a part that could not be read says so in its place. */
export function inspectionView(info: Inspection): HTMLElement[] {
  const parts: HTMLElement[] = [];
  parts.push(
    info.members === null
      ? note("members", "members", "no zip directory could be read: see the findings")
      : table(
          "members",
          ["name", "offset", "data", "size", "align", "crc32", "method"],
          info.members.map((m) => [
            visible(m.name),
            String(m.header_offset),
            String(m.data_offset),
            size(m.size),
            String(m.data_alignment),
            m.crc32,
            method(m.method),
          ]),
          "members",
        ),
  );
  parts.push(
    info.program === null
      ? unreadable("program.ptg", "program", info, "program.ptg")
      : el(
          "section",
          { id: "program" },
          el("h2", {}, "program.ptg"),
          el("p", {}, `${size(info.program.size)}, identifier `, el("code", {}, visible(info.program.identifier))),
        ),
  );
  const methods = methodsView(info);
  if (methods !== null) parts.push(methods);
  parts.push(
    info.tensors === null
      ? unreadable("constants", "tensors", info, "program.safetensors")
      : table(
          "constants",
          ["key", "dtype", "shape", "bytes", "alias of"],
          info.tensors.map((t) => [
            visible(t.key),
            t.dtype,
            `[${t.shape.join(", ")}]`,
            size(t.bytes),
            t.alias_of === null ? "" : visible(t.alias_of),
          ]),
          "tensors",
        ),
  );
  parts.push(
    info.metadata === null
      ? unreadable("metadata", "metadata", info, "metadata.json")
      : table(
          "metadata",
          ["name", "kind", "value", "meaning"],
          info.metadata.map((m) => {
            const shown = visible(literal(m.value));
            const value = el("span", { title: shown }, shown.length > 200 ? `${shown.slice(0, 200)}…` : shown);
            return [visible(m.name), m.kind, value, m.meaning ?? ""];
          }),
          "metadata",
        ),
  );
  const broken = unreadableView(info);
  if (broken !== null) parts.push(broken);
  if (info.totals !== null) {
    const t = info.totals;
    parts.push(
      el(
        "p",
        { id: "totals" },
        `${t.constants} constant${t.constants === 1 ? "" : "s"}, ${size(t.constant_bytes)} stored, ` +
          `${size(t.dedup_saved_bytes)} saved by deduplication`,
      ),
    );
  }
  return parts;
}
