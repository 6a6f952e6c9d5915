// ptn's operator table (spec section 4.5; ptn.program.operators): the ATen operator
// overloads a call node may name, each with its schema as data. The generated
// operator_table.ts gives schema/operators.json in a compact form, one line per overload
// (tools/codegen/typescript_operators.py):
//
//   add_.Tensor self:Tensor(a!) other:Tensor alpha:Scalar*= -> Tensor(a!)
//
// a parameter being name:type, then #n (a sized list), (a) or (a!) (its alias set; !:
// written in place), * (keyword-only), = (has a default), @v|v (the only values it may
// take, as Python's json.dumps writes them); a return, its type and alias set. It is parsed
// once, on first use. Every lookup by a name from a file goes through a Map.

import { repr } from "./pyrepr.js";

/** schema/operators.json as the generated operator_table.ts gives it. */
export interface OperatorTableSource {
  readonly version: number;
  readonly torch: string;
  /** [operator, why the table leaves it out]. */
  readonly refused: readonly (readonly [string, string])[];
  /** One overload per line, in the compact grammar above. */
  readonly operators: readonly string[];
}

/** A value a parameter may be held to (`allowed`), and its text as the messages quote it. */
export interface AllowedValue {
  readonly value: string | number | boolean | null;
  readonly text: string;
}

/** One parameter of a schema (ptn.program.operators.Param). */
export interface Param {
  readonly name: string;
  /** Tensor, int[], Tensor?[], ScalarType?... */
  readonly type: string;
  readonly kwargOnly: boolean;
  /** No default: a node must give it. */
  readonly required: boolean;
  /** The size of a sized list (int[1]), which also takes a single value. */
  readonly size: number | null;
  readonly alias: string | null;
  /** The operator writes it in place (Tensor(a!)). */
  readonly write: boolean;
  readonly allowed: readonly AllowedValue[] | null;
}

/** One value an operator returns: its type and the alias set it views (or is). */
export interface Return {
  readonly type: string;
  readonly alias: string | null;
  readonly write: boolean;
}

/** An operator overload's signature. */
export interface Schema {
  readonly name: string;
  readonly overload: string;
  readonly params: readonly Param[];
  readonly returns: readonly Return[];
  /** `linear` for the default overload, else `sum.dim_IntList`. */
  readonly qualified: string;
}

/** A call node its operator cannot take: the rule, where (pointer tokens below the node)
 * and why. The caller names the method and the node. */
export class NodeProblem extends Error {
  constructor(
    readonly rule: string,
    readonly tokens: readonly (string | number)[],
    message: string,
  ) {
    super(message);
  }
}

const PARAM = /^([A-Za-z_][A-Za-z0-9_]*):([A-Za-z?[\]]+)(?:#([0-9]+))?(?:\(([A-Za-z_][A-Za-z0-9_]*)(!?)\))?(\*?)(=?)(?:@(.+))?$/;
const RETURN = /^([A-Za-z?[\]]+)(?:\(([A-Za-z_][A-Za-z0-9_]*)(!?)\))?$/;

function bad(line: string): never {
  throw new Error(`the operator table's line ${JSON.stringify(line)} is not in its grammar (a bug of the codegen)`);
}

function parseParam(token: string, line: string): Param {
  const m = PARAM.exec(token) ?? bad(line);
  const allowed = m[8] === undefined
    ? null
    : m[8].split("|").map((text): AllowedValue => ({ value: JSON.parse(text) as AllowedValue["value"], text }));
  return {
    name: m[1] as string,
    type: m[2] as string,
    size: m[3] === undefined ? null : Number(m[3]),
    alias: m[4] ?? null,
    write: m[5] === "!",
    kwargOnly: m[6] === "*",
    required: m[7] !== "=",
    allowed,
  };
}

function parseOverload(line: string): Schema {
  const tokens = line.split(" ");
  const arrow = tokens.indexOf("->");
  const head = (tokens[0] ?? "").split(".");
  if (arrow < 1 || head.length !== 2) bad(line);
  const [name, overload] = head as [string, string];
  const params = tokens.slice(1, arrow).map((t) => parseParam(t, line));
  const returns = tokens.slice(arrow + 1).map((t): Return => {
    const m = RETURN.exec(t) ?? bad(line);
    return { type: m[1] as string, alias: m[2] ?? null, write: m[3] === "!" };
  });
  return { name, overload, params, returns, qualified: overload === "default" ? name : `${name}.${overload}` };
}

const TARGET = /^torch\.ops\.aten\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$/;
const NAMESPACE = /^torch\.ops\.([A-Za-z_][A-Za-z0-9_]*)\./;
const SHOWN_OVERLOADS = 8;
const UNKNOWN = "ptg-unknown-operator";

/** [operator, overload] of a target torch.ops.aten.<operator>.<overload>; a NodeProblem
 * (ptg-unknown-operator) for anything else. */
export function parseTarget(target: string): [string, string] {
  const match = TARGET.exec(target);
  if (match !== null) return [match[1] as string, match[2] as string];
  let why: string;
  const space = NAMESPACE.exec(target);
  if (!target) {
    why = "the call node has no target";
  } else if (space !== null && space[1] !== "aten") {
    why = `target ${repr(target)} is in namespace ${repr(space[1])}: ptn's operator table ` +
      "holds ATen operators only (torch.ops.aten.<operator>.<overload>)";
  } else {
    why = `target ${repr(target)} is not an ATen operator (torch.ops.aten.<operator>.<overload>)`;
  }
  throw new NodeProblem(UNKNOWN, ["target"], why);
}

/** The table as lookups: operator name -> overload name -> Schema. */
export class OperatorTable {
  readonly version: number;
  readonly torch: string;
  readonly refused: ReadonlyMap<string, string>;
  /** Operator -> overload -> schema, in the table's order. */
  readonly operators: ReadonlyMap<string, ReadonlyMap<string, Schema>>;

  constructor(source: OperatorTableSource) {
    this.version = source.version;
    this.torch = source.torch;
    this.refused = new Map(source.refused);
    const operators = new Map<string, Map<string, Schema>>();
    for (const line of source.operators) {
      const schema = parseOverload(line);
      let overloads = operators.get(schema.name);
      if (overloads === undefined) operators.set(schema.name, (overloads = new Map()));
      overloads.set(schema.overload, schema);
    }
    this.operators = operators;
  }

  /** The schema of the overload `target` names; a NodeProblem (ptg-unknown-operator) if the
   * table has no such operator or overload. */
  lookup(target: string): Schema {
    const [name, overload] = parseTarget(target);
    const overloads = this.operators.get(name);
    if (overloads === undefined) {
      const said = this.refused.get(name) ??
        `version ${this.version}, from torch ${this.torch}, holds pure tensor computation only`;
      throw new NodeProblem(UNKNOWN, ["target"], `operator ${repr(name)} is not in ptn's operator table (${said})`);
    }
    const schema = overloads.get(overload);
    if (schema === undefined) {
      const names = [...overloads.keys()];
      const shown = names.slice(0, SHOWN_OVERLOADS).join(", ");
      const more = names.length > SHOWN_OVERLOADS ? ", ..." : "";
      throw new NodeProblem(UNKNOWN, ["target"],
        `operator ${repr(name)} has no overload ${repr(overload)} in ptn's operator table (it has: ${shown}${more})`);
    }
    return schema;
  }
}

const PARSED = new WeakMap<OperatorTableSource, OperatorTable>();

/** The table of `source`, parsed once per source. */
export function operatorTable(source: OperatorTableSource): OperatorTable {
  let table = PARSED.get(source);
  if (table === undefined) PARSED.set(source, (table = new OperatorTable(source)));
  return table;
}
