// DOM building without markup: every string from a package becomes a text node
// (textContent), never HTML, so a crafted name cannot inject elements or script.

import { floatRepr } from "../../generated/typescript/src/index.js";

type Child = Node | string | null | undefined | false;

/** An element with attributes and children; strings become text nodes. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

// C0/C1 controls and the bidirectional controls that could reorder what a reader sees.
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** A name from a file as visible text: controls and bidi overrides shown as \u{...} escapes. */
export function visible(text: string): string {
  return text.replace(INVISIBLE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** Bytes as the CLI prints them: "64 B", "4.9 KiB". */
export function size(n: number): string {
  let value = n;
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (value < 1024 || unit === "GiB") return unit === "B" ? `${value} B` : `${value.toFixed(1)} ${unit}`;
    value /= 1024;
  }
  return String(n);
}

/** A metadata value as a JSON literal (bigint integers included), as `ptn inspect` prints it
 * (a float as Python writes it: -0.0, 1e+21); a value that breaks a rule may be any JSON
 * (an object comes as a Map). */
export function literal(value: unknown): string {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") return floatRepr(value);
  if (Array.isArray(value)) return `[${value.map(literal).join(", ")}]`;
  if (value instanceof Map) return `{${[...value].map(([k, v]) => `${JSON.stringify(k)}: ${literal(v)}`).join(", ")}}`;
  return JSON.stringify(value) ?? String(value);
}
