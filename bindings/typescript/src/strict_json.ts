// Strict JSON (spec section 8) for the ptn TypeScript binding.
//
// JSON.parse cannot see duplicate names, number token kinds or integers beyond 2^53, so
// this is a small tokenizer of its own. Integer tokens become `bigint`, float tokens
// `number`; objects become `Map`s in document order. The rules are checked exactly as
// the Python reference (ptn.json.strict) does, including which rule wins:
//   1. json-too-large, json-bom, json-invalid-utf8 (the whole document, before parsing);
//   2. while parsing, in document order: json-syntax, json-nonfinite-literal, an integer
//      token of more than 4300 digits (json-number-overflow), json-duplicate-name (when
//      its object closes), nesting beyond PARSE_DEPTH_CAP (json-too-deep);
//   3. json-trailing-data;
//   4. a top-level float that overflows binary64 (json-number-overflow);
//   5. json-lone-surrogate (the first in document order);
//   6. walking containers in document order: one nested deeper than 64 levels
//      (json-too-deep) or one holding a float that overflows (json-number-overflow).

/** json-too-large: the proposed ExecuTorch C++ loader's cap (spec 1.1) on a JSON member. */
export const MAX_JSON_BYTES = 64 * 1024 * 1024;
/** json-too-deep: arrays and objects nest at most this deep; the top-level value is level 1. */
export const MAX_DEPTH = 64;
/**
 * Nesting deeper than this stops the parse at once with json-too-deep, as the Python
 * reference does at its interpreter's recursion limit (about 1000 levels); nesting between
 * MAX_DEPTH and this cap is reported after the parse (step 6).
 */
export const PARSE_DEPTH_CAP = 900;
/** json-number-overflow: an integer token may have at most this many digits. */
export const MAX_INT_DIGITS = 4300;

/** One rule of the spec is broken (or a typed read asked for something absent). */
export class PtnError extends Error {
  /** The stable rule id from spec.md, e.g. "json-duplicate-name". */
  readonly rule: string;
  /** The message without rule, member and pointer. */
  readonly detail: string;
  /** The package member ("metadata.json"), or null. */
  readonly member: string | null;
  /** A JSON pointer (RFC 6901) into the member ("" = the whole document), or null. */
  readonly pointer: string | null;

  constructor(
    rule: string,
    detail: string,
    options: { member?: string | null; pointer?: string | null } = {},
  ) {
    const member = options.member ?? null;
    const pointer = options.pointer ?? null;
    const where = [member, pointer].filter((p) => p).join(" ");
    super(`${rule}${where ? " " + where : ""}: ${detail}`);
    this.name = "PtnError";
    this.rule = rule;
    this.detail = detail;
    this.member = member;
    this.pointer = pointer;
  }

  /** This error attributed to `member` (keeps an existing one). */
  withMember(member: string): PtnError {
    if (this.member !== null) return this;
    return new PtnError(this.rule, this.detail, { member, pointer: this.pointer });
  }
}

/** Escape one reference token of a JSON pointer (RFC 6901). */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Build a JSON pointer from raw tokens: pointer("a/b", 0) === "/a~1b/0". */
export function pointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => "/" + escapePointerToken(String(t))).join("");
}

/** A parsed JSON value: integer tokens are bigint, float tokens number. */
export type JsonValue = null | boolean | bigint | number | string | JsonValue[] | JsonObject;
/** A JSON object, names in document order. */
export type JsonObject = Map<string, JsonValue>;

/**
 * @internal A list of numbers that parseJsonPacked stored as numbers, not one bigint per
 * integer token (about 40 bytes): a plain array while short (cheap to make), a
 * Float64Array once long (8 bytes an item, pages touched only as they fill). `ints`:
 * every item was an integer token (of at most 15 digits, so exact in a double).
 */
export class NumberList {
  constructor(
    readonly values: readonly number[] | Float64Array,
    readonly ints: boolean,
  ) {}
}

/** @internal What parseJsonPacked returns: a JsonValue whose lists may be NumberLists. */
export type PackedValue =
  | null
  | boolean
  | bigint
  | number
  | string
  | PackedValue[]
  | Map<string, PackedValue>
  | NumberList;

export interface ParseOptions {
  /** The package member named in errors. */
  member?: string;
  /** false: RFC 8259 alone (duplicate names allowed, the last wins). Default true. */
  uniqueNames?: boolean;
}

/** Lists of numbers longer than this go into a Float64Array. */
const SHORT_LIST = 4096;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const ESCAPED_SURROGATE = /\\u[dD][89abcdefABCDEF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ESCAPES: ReadonlyMap<string, string> = new Map([
  ['"', '"'], ["\\", "\\"], ["/", "/"], ["b", "\b"], ["f", "\f"], ["n", "\n"], ["r", "\r"], ["t", "\t"],
]);

/** Index of the first byte that is not part of well-formed UTF-8, or -1. */
function invalidUtf8At(bytes: Uint8Array): number {
  const n = bytes.length;
  const cont = (k: number, lo: number, hi: number): boolean =>
    k < n && bytes[k]! >= lo && bytes[k]! <= hi;
  let i = 0;
  while (i < n) {
    const c = bytes[i]!;
    if (c < 0x80) {
      i += 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      if (!cont(i + 1, 0x80, 0xbf)) return i;
      i += 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      const lo = c === 0xe0 ? 0xa0 : 0x80;
      const hi = c === 0xed ? 0x9f : 0xbf;
      if (!cont(i + 1, lo, hi) || !cont(i + 2, 0x80, 0xbf)) return i;
      i += 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      const lo = c === 0xf0 ? 0x90 : 0x80;
      const hi = c === 0xf4 ? 0x8f : 0xbf;
      if (!cont(i + 1, lo, hi) || !cont(i + 2, 0x80, 0xbf) || !cont(i + 3, 0x80, 0xbf)) return i;
      i += 4;
    } else {
      return i;
    }
  }
  return -1;
}

/** UTF-8 length of a string (a lone surrogate counts 3 bytes, as U+FFFD would). */
function utf8Length(text: string): number {
  let size = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) size += 1;
    else if (c < 0x800) size += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        size += 4;
        i++;
      } else size += 3;
    } else size += 3;
  }
  return size;
}

/** The document as text, after json-too-large, json-bom and json-invalid-utf8. */
function documentText(input: string | Uint8Array): string {
  if (typeof input === "string") {
    const size = utf8Length(input);
    if (size > MAX_JSON_BYTES) {
      throw new PtnError("json-too-large", `document of ${size} bytes exceeds ${MAX_JSON_BYTES}`);
    }
    if (input.charCodeAt(0) === 0xfeff) {
      throw new PtnError("json-bom", "document starts with a byte order mark; remove it");
    }
    const lone = LONE_SURROGATE.exec(input);
    if (lone) {
      throw new PtnError(
        "json-invalid-utf8",
        `unpaired surrogate at UTF-16 offset ${lone.index}: the text has no UTF-8 form`,
      );
    }
    return input;
  }
  if (input.length > MAX_JSON_BYTES) {
    throw new PtnError(
      "json-too-large",
      `document of ${input.length} bytes exceeds ${MAX_JSON_BYTES}`,
    );
  }
  if (input.length >= 3 && input[0] === 0xef && input[1] === 0xbb && input[2] === 0xbf) {
    throw new PtnError("json-bom", "document starts with a byte order mark; remove it");
  }
  const bad = invalidUtf8At(input);
  if (bad >= 0) throw new PtnError("json-invalid-utf8", `invalid UTF-8 at byte ${bad}`);
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(input);
}

class Parser {
  i = 0;
  private readonly n: number;

  constructor(
    private readonly s: string,
    private readonly unique: boolean,
    private readonly pack: boolean,
  ) {
    this.n = s.length;
  }

  syntax(what: string): never {
    throw new PtnError("json-syntax", `${what} at offset ${this.i}`);
  }

  skipWs(): void {
    const s = this.s;
    while (this.i < this.n) {
      const c = s.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      this.i++;
    }
  }

  value(depth: number): JsonValue {
    const s = this.s;
    if (this.i >= this.n) this.syntax("Expecting value");
    switch (s[this.i]) {
      case '"':
        return this.string();
      case "{":
        return this.object(depth + 1);
      case "[":
        return this.array(depth + 1);
      case "n":
        if (s.startsWith("null", this.i)) {
          this.i += 4;
          return null;
        }
        break;
      case "t":
        if (s.startsWith("true", this.i)) {
          this.i += 4;
          return true;
        }
        break;
      case "f":
        if (s.startsWith("false", this.i)) {
          this.i += 5;
          return false;
        }
        break;
      case "N":
        if (s.startsWith("NaN", this.i)) this.nonfinite("NaN");
        break;
      case "I":
        if (s.startsWith("Infinity", this.i)) this.nonfinite("Infinity");
        break;
      case "-":
        if (s.startsWith("-Infinity", this.i)) this.nonfinite("-Infinity");
        break;
    }
    return this.number();
  }

  nonfinite(token: string): never {
    throw new PtnError("json-nonfinite-literal", `${token} is not JSON; write a finite number`);
  }

  number(): bigint | number {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.s);
    if (m === null) this.syntax("Expecting value");
    const token = m[0];
    this.i += token.length;
    if (m[1] === undefined && m[2] === undefined) {
      const digits = token.length - (token[0] === "-" ? 1 : 0);
      if (digits > MAX_INT_DIGITS) {
        throw new PtnError(
          "json-number-overflow",
          `number too long to represent: an integer of ${digits} digits (at most ${MAX_INT_DIGITS})`,
        );
      }
      return BigInt(token);
    }
    return Number(token);
  }

  string(): string {
    const s = this.s;
    this.i++;
    let out = "";
    for (;;) {
      PLAIN_RUN.lastIndex = this.i;
      const run = PLAIN_RUN.exec(s)![0];
      out += run;
      this.i += run.length;
      if (this.i >= this.n) this.syntax("Unterminated string");
      const c = s[this.i]!;
      if (c === '"') {
        this.i++;
        return out;
      }
      if (c !== "\\") this.syntax("Invalid control character");
      this.i++;
      if (this.i >= this.n) this.syntax("Unterminated string");
      const e = s[this.i]!;
      if (e !== "u") {
        const decoded = ESCAPES.get(e);
        if (decoded === undefined) this.syntax("Invalid \\escape");
        out += decoded;
        this.i++;
        continue;
      }
      const hex = s.slice(this.i + 1, this.i + 5);
      if (!HEX4.test(hex)) this.syntax("Invalid \\uXXXX escape");
      // Code units concatenate: an escaped pair forms one code point, a lone one stays lone.
      out += String.fromCharCode(parseInt(hex, 16));
      this.i += 5;
    }
  }

  tooDeep(depth: number): void {
    if (depth > PARSE_DEPTH_CAP) {
      throw new PtnError("json-too-deep", `nesting deeper than ${MAX_DEPTH}`);
    }
  }

  object(depth: number): JsonObject {
    this.tooDeep(depth);
    const s = this.s;
    const out: JsonObject = new Map();
    let duplicate: string | null = null;
    this.i++;
    this.skipWs();
    if (s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      if (s[this.i] !== '"') this.syntax("Expecting property name enclosed in double quotes");
      const name = this.string();
      this.skipWs();
      if (s[this.i] !== ":") this.syntax("Expecting ':' delimiter");
      this.i++;
      this.skipWs();
      const value =
        this.pack && depth === 1 && s[this.i] === "["
          ? (this.numberList(depth) as JsonValue)
          : this.value(depth);
      if (this.unique && duplicate === null && out.has(name)) duplicate = name;
      out.set(name, value);
      this.skipWs();
      if (s[this.i] === "}") break;
      if (s[this.i] !== ",") this.syntax("Expecting ',' delimiter");
      this.i++;
      this.skipWs();
    }
    this.i++;
    if (duplicate !== null) {
      throw new PtnError(
        "json-duplicate-name",
        `name ${JSON.stringify(duplicate)} appears more than once in one object`,
        { pointer: pointer(duplicate) },
      );
    }
    return out;
  }

  /**
   * A list of numbers as a NumberList (no bigint per integer token). Anything
   * else, an integer of more than 15 digits included, is parsed again from the '[' by
   * value(): this pass throws nothing, so every verdict and message stays value()'s.
   */
  numberList(depth: number): JsonValue | NumberList {
    const s = this.s;
    const start = this.i;
    this.i++;
    this.skipWs();
    const short: number[] = [];
    let long: Float64Array | null = null;
    let n = 0;
    let ints = true;
    for (;;) {
      NUMBER.lastIndex = this.i;
      const m = NUMBER.exec(s);
      const isInt = m !== null && m[1] === undefined && m[2] === undefined;
      if (m === null || (isInt && m[0].length > 15)) break;
      if (long === null && n < SHORT_LIST) {
        short.push(Number(m[0]));
      } else {
        if (long === null || n === long.length) {
          const bigger: Float64Array = new Float64Array(2 * n);
          bigger.set(long ?? short);
          long = bigger;
        }
        long[n] = Number(m[0]);
      }
      n++;
      ints &&= isInt;
      this.i += m[0].length;
      this.skipWs();
      const c = s.charCodeAt(this.i);
      if (c === 0x5d) {
        this.i++;
        return new NumberList(long === null ? short : long.subarray(0, n), ints);
      }
      if (c !== 0x2c) break;
      this.i++;
      this.skipWs();
    }
    this.i = start;
    return this.value(depth);
  }

  array(depth: number): JsonValue[] {
    this.tooDeep(depth);
    const s = this.s;
    const out: JsonValue[] = [];
    this.i++;
    this.skipWs();
    if (s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth));
      this.skipWs();
      if (s[this.i] === "]") break;
      if (s[this.i] !== ",") this.syntax("Expecting ',' delimiter");
      this.i++;
      this.skipWs();
    }
    this.i++;
    return out;
  }
}

function isContainer(
  value: PackedValue,
): value is PackedValue[] | Map<string, PackedValue> | NumberList {
  return Array.isArray(value) || value instanceof Map || value instanceof NumberList;
}

function isOverflow(value: PackedValue): boolean {
  return typeof value === "number" && !Number.isFinite(value);
}

/** The first lone surrogate in document order (names and strings), as a PtnError. `path`
 * holds the tokens that reach `value`; the pointer text is built once, for the string
 * reported (not per value: a deep chain of long names would make that quadratic). */
function loneSurrogate(value: PackedValue, path: (string | number)[]): PtnError | null {
  const error = (last?: string | number) =>
    new PtnError("json-lone-surrogate", "string holds a lone surrogate escape", {
      pointer: last === undefined ? pointer(...path) : pointer(...path, last),
    });
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? error() : null;
  if (value instanceof Map) {
    for (const [name, child] of value) {
      if (LONE_SURROGATE.test(name)) return error();
      if (typeof child === "string") {
        if (LONE_SURROGATE.test(child)) return error(name);
        continue;
      }
      path.push(name);
      const found = loneSurrogate(child, path);
      path.pop();
      if (found) return found;
    }
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child = value[i]!;
      if (typeof child === "string") {
        if (LONE_SURROGATE.test(child)) return error(i);
        continue;
      }
      path.push(i);
      const found = loneSurrogate(child, path);
      path.pop();
      if (found) return found;
    }
  }
  return null;
}

/** Nesting deeper than MAX_DEPTH, or a float that overflowed, container by container. */
function scan(
  node: PackedValue[] | Map<string, PackedValue> | NumberList,
  depth: number,
): PtnError | null {
  if (depth > MAX_DEPTH) return new PtnError("json-too-deep", `nesting deeper than ${MAX_DEPTH}`);
  if (node instanceof NumberList) {
    return node.values.every(Number.isFinite) ? null : overflowError();
  }
  const children = node instanceof Map ? node.values() : node;
  for (const child of children) {
    if (isOverflow(child)) return overflowError();
  }
  for (const child of node instanceof Map ? node.values() : node) {
    if (isContainer(child)) {
      const error = scan(child, depth + 1);
      if (error) return error;
    }
  }
  return null;
}

function overflowError(): PtnError {
  return new PtnError(
    "json-number-overflow",
    "a number overflows binary64 to infinity; write a finite number",
  );
}

function parse(input: string | Uint8Array, unique: boolean, pack: boolean): PackedValue {
  const text = documentText(input);
  const parser = new Parser(text, unique, pack);
  parser.skipWs();
  const value = parser.value(0);
  parser.skipWs();
  if (parser.i !== text.length) {
    throw new PtnError("json-trailing-data", `Extra data at offset ${parser.i}`);
  }
  if (isOverflow(value)) {
    throw new PtnError("json-number-overflow", "the number overflows binary64 to infinity");
  }
  if (ESCAPED_SURROGATE.test(text)) {
    const error = loneSurrogate(value, []);
    if (error) throw error;
  }
  if (isContainer(value)) {
    const error = scan(value, 1);
    if (error) throw error;
  }
  return value;
}

/**
 * Parse one strict JSON document (bytes, or text that must have a UTF-8 form); throw
 * PtnError (rule json-*) otherwise. Never throws anything but PtnError.
 */
export function parseJson(input: string | Uint8Array, options: ParseOptions = {}): JsonValue {
  return parseWith(input, options, false) as JsonValue;
}

/**
 * @internal parseJson, but the lists of numbers directly in a top-level object come back as
 * NumberLists (the metadata reader's representation); same verdicts and messages.
 */
export function parseJsonPacked(
  input: string | Uint8Array,
  options: ParseOptions = {},
): PackedValue {
  return parseWith(input, options, true);
}

function parseWith(input: string | Uint8Array, options: ParseOptions, pack: boolean): PackedValue {
  try {
    return parse(input, options.uniqueNames ?? true, pack);
  } catch (err) {
    const error =
      err instanceof PtnError
        ? err
        : err instanceof RangeError
          ? new PtnError("json-too-deep", `nesting deeper than ${MAX_DEPTH} (${err.message})`)
          : err;
    throw options.member && error instanceof PtnError ? error.withMember(options.member) : error;
  }
}

/** Python's repr of a float (and so its JSON text): shortest digits, ".0" on integers,
 * exponent form (two-digit exponent) below 1e-4 and from 1e16; "-0.0" keeps its sign. */
export function floatRepr(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa = "", exponent = "0"] = x.toExponential().split("e");
  const e = Number(exponent);
  if (e >= 16 || e < -4) return `${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  const plain = String(x);
  return plain.includes(".") ? plain : plain + ".0";
}
