// Python's spelling of values in messages (repr), and its order of strings: the TypeScript
// findings say what ptn's say, word for word.

import { floatRepr } from "./strict_json.js";

/** What Python's repr escapes in a str: backslash, quotes, and the characters that
 * str.isprintable rejects (categories C, Zl, Zp, and Zs other than the space). */
const NOT_PRINTED = /[\\'"\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/gu;
const SHORT_ESCAPES: ReadonlyMap<string, string> = new Map([["\\", "\\\\"], ["\t", "\\t"], ["\n", "\\n"], ["\r", "\\r"]]);

function escapeChar(ch: string, quote: string): string {
  if (ch === "'" || ch === '"') return ch === quote ? "\\" + ch : ch;
  const short = SHORT_ESCAPES.get(ch);
  if (short !== undefined) return short;
  const cp = ch.codePointAt(0) ?? 0;
  if (cp < 0x100) return "\\x" + cp.toString(16).padStart(2, "0");
  if (cp < 0x10000) return "\\u" + cp.toString(16).padStart(4, "0");
  return "\\U" + cp.toString(16).padStart(8, "0");
}

/** Python's repr of a str, as the reference's messages quote keys and names. */
export function repr(value: unknown): string {
  if (typeof value === "string") {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    return quote + value.replace(NOT_PRINTED, (ch) => escapeChar(ch, quote)) + quote;
  }
  if (typeof value === "bigint") return value.toString();
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return floatRepr(value);
  if (Array.isArray(value)) return `[${value.map(repr).join(", ")}]`;
  if (value instanceof Map) return `{${[...value].map(([k, v]) => `${repr(k)}: ${repr(v)}`).join(", ")}}`;
  return String(value);
}

/** Python's sort order of strings: by code point. */
export function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i] as string).codePointAt(0)! - (y[i] as string).codePointAt(0)!;
    if (d) return d;
  }
  return x.length - y.length;
}

/** Python's repr of bytes (b'NPTG', b'\x00\x01'). */
export function bytesRepr(b: Uint8Array): string {
  let out = "";
  for (const c of b) {
    if (c === 0x5c) out += "\\\\";
    else if (c === 0x27) out += "\\'";
    else if (c === 0x09) out += "\\t";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c);
    else out += "\\x" + c.toString(16).padStart(2, "0");
  }
  return `b'${out}'`;
}
