#!/usr/bin/env node
// ptn-validate: check .ptn packages with the TypeScript binding, as `ptn validate` does.
//
//   node bin/ptn-validate.mjs [--fast] [--json] PATH...
//
// PATH is a file or a directory (searched for *.ptn). --json prints the document of
// `ptn validate --json` (schema/report.schema.json). Exit status: 0 all valid, 1 some
// invalid, 2 usage or I/O problem. Needs the build: `npm ci && npx tsc` in the package.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

import { RULE_SEVERITY, SPEC_VERSION, validatePackage } from "../dist/index.js";
import { nodeCrc32, nodeFileSource } from "../dist/node.js";

const USAGE = "usage: ptn-validate [--fast] [--json] PATH...";
const HELP = `${USAGE}

Check .ptn packages against spec.md. PATH is a file or a directory (searched for *.ptn).
Deep by default (the CRC-32 of every member); --fast reads the headers only.

  --fast   skip the CRC-32 and BOOL checks (reads O(headers) bytes)
  --json   print the report as JSON (the document of \`ptn validate --json\`)

Exit status: 0 all valid, 1 some invalid, 2 usage or I/O problem.`;

// The docs site whose rendered spec explains each rule: ptn's DOCS_URL (ptn/cli/links.py,
// mkdocs.yml site_url; tests/test_cli_inspector.py keeps them equal). $PTN_DOCS_URL overrides.
const DOCS_URL = "https://ptn-tools.readthedocs.io/en/latest/";

/** The rendered spec's section for a rule: <docs>/spec/#<rule>-<severity of its heading>. */
function ruleUrl(rule) {
  const base = process.env.PTN_DOCS_URL || DOCS_URL;
  return `${base.endsWith("/") ? base : `${base}/`}spec/#${rule}-${RULE_SEVERITY[rule]}`;
}

const TOOL_VERSION = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
const NOT_VERDICTS = new Set(["ptn-io-error", "ptn-internal-error"]);

/** Non-printing characters (controls, format, separators other than space) as escapes. */
function safe(text) {
  if (text === null || text === undefined) return "";
  return String(text).replace(/[\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/gu, (ch) => {
    const cp = ch.codePointAt(0);
    if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, "0")}`;
    if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, "0")}`;
    return `\\U${cp.toString(16).padStart(8, "0")}`;
  });
}

function parseArgs(argv) {
  const options = { fast: false, json: false, paths: [] };
  let onlyPaths = false;
  for (const arg of argv) {
    if (onlyPaths || !arg.startsWith("-") || arg === "-") options.paths.push(arg);
    else if (arg === "--") onlyPaths = true;
    else if (arg === "--fast") options.fast = true;
    else if (arg === "--json") options.json = true;
    else if (arg === "-h" || arg === "--help") return { help: true };
    else return { error: `no such option: ${arg}` };
  }
  if (options.paths.length === 0) return { error: "missing argument PATH..." };
  return options;
}

function findPackages(paths) {
  const files = [];
  const problems = [];
  for (const path of paths) {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      problems.push([path, "no such file or directory"]);
      continue;
    }
    if (stat.isDirectory()) {
      const found = readdirSync(path, { recursive: true })
        .map((rel) => join(path, String(rel)))
        .filter((p) => p.endsWith(".ptn") && statSync(p, { throwIfNoEntry: false })?.isFile())
        .sort(byCodePoint);
      if (found.length === 0) problems.push([path, "directory holds no .ptn file"]);
      for (const file of found) files.push(file); // not spread: a tree of 10^5 packages
    } else {
      files.push(path);
    }
  }
  return { files, problems };
}

function byCodePoint(a, b) {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d;
  }
  return x.length - y.length;
}

const isValid = (findings) => !findings.some((f) => f.severity === "error");

function summary(results) {
  const valid = results.filter((r) => isValid(r.findings)).length;
  const all = results.flatMap((r) => r.findings);
  return {
    files: results.length,
    valid,
    invalid: results.length - valid,
    errors: all.filter((f) => f.severity === "error").length,
    warnings: all.filter((f) => f.severity === "warning").length,
    advice: all.filter((f) => f.severity === "advice").length,
  };
}

/** JSON as Python's json.dumps(indent=2, ensure_ascii=True) writes it. */
function dumps(document) {
  return JSON.stringify(document, null, 2).replace(
    /[\u007f-\uffff]/g,
    (ch) => (ch === "\u007f" ? ch : `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
}

function count(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function textReport(results, colour) {
  const lines = [];
  for (const { path, findings } of results) {
    for (const f of findings) {
      const where = [f.member, f.pointer].filter((p) => p).map(safe).join(" ");
      const code = f.severity === "error" ? 31 : f.severity === "warning" ? 33 : 36;
      const severity = colour ? `\x1b[${code}m${f.severity}\x1b[0m` : f.severity;
      lines.push(`${safe(path)}: ${severity} ${f.rule}${where ? ` [${where}]` : ""} ${safe(f.message)}`);
    }
  }
  const s = summary(results);
  lines.push(
    `${count(s.files, "file")}: ${s.valid} valid, ${s.invalid} invalid ` +
      `(${count(s.errors, "error")}, ${count(s.warnings, "warning")}` +
      `${s.advice ? `, ${s.advice} advice` : ""})`,
  );
  const rules = new Set(results.flatMap(({ findings }) => findings.map((f) => f.rule)));
  for (const rule of rules) lines.push(`see ${ruleUrl(rule)}`);
  return lines.join("\n");
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.help) {
    process.stdout.write(HELP + "\n");
    return 0;
  }
  if (options.error) {
    process.stderr.write(`${USAGE}\nptn-validate: ${options.error}\n`);
    return 2;
  }
  const { files, problems } = findPackages(options.paths);
  for (const [path, problem] of problems) process.stderr.write(`ptn-validate: ${safe(path)}: ${problem}\n`);
  const results = [];
  for (const path of files) {
    const source = nodeFileSource(path);
    try {
      const report = await validatePackage(source, { deep: !options.fast, crc32: nodeCrc32 });
      results.push({ path, findings: report.findings });
    } finally {
      await source.close();
    }
  }
  if (options.json) {
    const unchecked = problems.map(([path, problem]) => ({
      path,
      findings: [{ rule: "ptn-io-error", severity: "error", member: null, pointer: null, message: problem }],
    }));
    const all = [...results, ...unchecked];
    const document = {
      spec_version: SPEC_VERSION,
      tool_version: TOOL_VERSION,
      files: all.map(({ path, findings }) => ({ path, valid: isValid(findings), findings })),
      summary: summary(all),
    };
    process.stdout.write(dumps(document) + "\n");
  } else {
    process.stdout.write(textReport(results, Boolean(process.stdout.isTTY)) + "\n");
  }
  const ioError = results.some((r) => r.findings.some((f) => NOT_VERDICTS.has(f.rule)));
  if (problems.length || ioError) return 2;
  return results.every((r) => isValid(r.findings)) ? 0 : 1;
}

process.exitCode = await main();
