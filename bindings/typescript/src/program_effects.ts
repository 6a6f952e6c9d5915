// The operator rules of a program's graphs, from ptn's operator table (spec sections 4.4
// and 4.5; ptn.program.effects). Every call node names an overload of the table and fits
// its schema (ptg-unknown-operator, ptg-operator-schema-mismatch); a parameter the table
// marks written (Tensor(a!)) is given only values whose storage the method declares as
// state or the graph computed (ptg-undeclared-mutation), the storage of a value following
// the table's alias sets (a view's output lives in its input's); a non-persistent buffer
// that a node reads and no method writes is zero at every read (ptg-buffer-never-written).
// One walk of each method's nodes in order, each looked up once: linear in the program.
// Names come from the file: every lookup by them goes through a Map.

import { Budget, raw } from "./budget.js";
import { PTG, type Decoded, type ProgramLayout, type UnionValue } from "./program.js";
import { bind, nodeError } from "./program_calls.js";
import { NodeProblem, type OperatorTable, type Param, type Schema } from "./program_operators.js";
import { repr } from "./pyrepr.js";
import { pointer } from "./strict_json.js";
import type { Severity } from "./package_api.js";
import type { RawFinding } from "./zip_reader.js";

type Tokens = (string | number)[];

/** Where a value's storage comes from (ptn.program.effects.Root). */
interface Root {
  /** What it is, for messages. */
  readonly label: string;
  readonly writable: boolean;
  /** Why it may not be written (what would declare it), when it may not. */
  readonly why: string;
  /** The fqn of the non-persistent buffer it is, if it is one. */
  readonly buffer: string | null;
}

const FRESH: Root = { label: "a value the graph computes", writable: true, why: "", buffer: null };

/** A non-persistent buffer across the program: its first declaration, read and written. */
interface BufferState {
  readonly method: number;
  readonly index: number;
  readonly name: string;
  read: boolean;
  written: boolean;
}

function argValue(arg: Decoded): UnionValue | null {
  return (arg["arg"] as Decoded)["value"] as UnionValue | null;
}

/** [pointer tokens below the argument's value, name] of each tensor it names. */
function tensors(value: UnionValue | null): [Tokens, string][] {
  if (value === null || value.value === null) return [];
  const v = value.value;
  switch (value.member) {
    case "TensorArg":
      return [[[], v["name"] as string]];
    case "TensorListArg":
      return (v["names"] as string[]).map((name, m): [Tokens, string] => [["names", m], name]);
    case "OptionalTensorListArg": {
      const names = v["names"] as string[];
      const present = v["has_value"] as boolean[];
      const out: [Tokens, string][] = [];
      for (let m = 0; m < Math.min(names.length, present.length); m++) {
        if (present[m]) out.push([["names", m], names[m] as string]);
      }
      return out;
    }
    default:
      return [];
  }
}

class Walk {
  readonly out = new Budget();
  readonly buffers = new Map<string, BufferState>();
  readonly callFunction: number;
  readonly tensorList: number;
  readonly userInputMutation: number;
  readonly bufferMutation: number;

  constructor(
    readonly table: OperatorTable,
    readonly layout: ProgramLayout,
  ) {
    this.callFunction = layout.enums["OpKind"]?.["CALL_FUNCTION"] ?? 0;
    this.tensorList = layout.enums["OutputValueKind"]?.["TENSOR_LIST"] ?? 1;
    this.userInputMutation = layout.enums["OutputKind"]?.["USER_INPUT_MUTATION"] ?? 2;
    this.bufferMutation = layout.enums["OutputKind"]?.["BUFFER_MUTATION"] ?? 1;
  }

  report(rule: string, tokens: Tokens, message: string, severity: Severity = "error"): void {
    if (this.out.room(rule, severity)) this.out.append(raw(rule, severity, PTG, pointer(...tokens), message));
    else this.out.skip(rule, severity);
  }

  /** The node's schema, bound; null (and a finding) when it has none or does not fit. */
  schema(method: string, node: Decoded, here: Tokens): Schema | null {
    try {
      const schema = this.table.lookup(node["target"] as string);
      bind(node, schema, this.layout);
      return schema;
    } catch (err) {
      if (!(err instanceof NodeProblem)) throw err;
      this.report(err.rule, [...here, ...err.tokens], nodeError(method, node, err));
      return null;
    }
  }

  method(i: number, method: Decoded): void {
    const name = method["name"] as string;
    const graph = method["graph"] as Decoded;
    const specs = method["output_specs"] as Decoded[];
    const mutatedInputs = new Set(
      specs.filter((s) => s["kind"] === this.userInputMutation).map((s) => s["target"] as string),
    );
    const roots = new Map<string, Root>();
    for (const input of graph["inputs"] as string[]) {
      roots.set(input, {
        label: `user input ${repr(input)}`,
        writable: mutatedInputs.has(input),
        why: "no USER_INPUT_MUTATION output spec of the method updates it",
        buffer: null,
      });
    }
    for (const c of method["constants"] as Decoded[]) {
      const constant = c["name"] as string;
      roots.set(constant, {
        label: `constant ${repr(constant)} (data key ${repr(c["data_key"] as string)})`,
        writable: c["mutated"] as boolean,
        why: "the method binds it with mutated = false",
        buffer: null,
      });
    }
    (method["mutable_buffers"] as Decoded[]).forEach((b, k) => {
      const buffer = b["name"] as string;
      const fqn = b["fqn"] as string;
      roots.set(buffer, { label: `buffer ${repr(buffer)}`, writable: true, why: "", buffer: fqn });
      if (!this.buffers.has(fqn)) this.buffers.set(fqn, { method: i, index: k, name: buffer, read: false, written: false });
    });
    const nodes = graph["nodes"] as Decoded[];
    for (let j = 0; j < nodes.length; j++) {
      const node = nodes[j] as Decoded;
      const here: Tokens = ["methods", i, "graph", "nodes", j];
      if (node["op_kind"] === this.callFunction) {
        const schema = this.schema(name, node, here);
        if (schema !== null) this.effects(name, node, schema, here, roots);
      }
      this.subgraphs(name, node, here);
    }
  }

  /** Check what a bound node writes; record the buffers it reads and writes, and the roots
   * of its outputs. */
  effects(method: string, node: Decoded, schema: Schema, here: Tokens, roots: Map<string, Root>): void {
    const byAlias = new Map<string, Root[]>();
    const params = new Map(schema.params.map((p) => [p.name, p]));
    const inputs = node["inputs"] as Decoded[];
    for (let k = 0; k < inputs.length; k++) {
      const arg = inputs[k] as Decoded;
      const argName = arg["name"] as string;
      // bind has checked that every argument names a parameter.
      const param = (argName ? params.get(argName) : schema.params[k]) as Param;
      const at: Tokens = [...here, "inputs", k, "arg", "value"];
      const found: Root[] = [];
      for (const [tokens, value] of tensors(argValue(arg))) {
        const root = roots.get(value);
        if (root === undefined) continue; // undefined: ptg-undefined-value says so
        found.push(root);
        if (param.write) this.write(method, node, schema, param, [...at, ...tokens], value, root);
        else if (root.buffer !== null) (this.buffers.get(root.buffer) as BufferState).read = true;
      }
      if (param.alias !== null) byAlias.set(param.alias, found);
    }
    const outputs = node["outputs"] as Decoded[];
    for (let o = 0; o < Math.min(outputs.length, schema.returns.length); o++) {
      const out = outputs[o] as Decoded;
      const alias = (schema.returns[o] as Schema["returns"][number]).alias;
      const viewed = byAlias.get(alias ?? "") ?? [];
      const root = viewed[0] ?? FRESH;
      const names = out["kind"] === this.tensorList ? (out["names"] as string[]) : [out["name"] as string];
      for (const defined of names) if (defined && !roots.has(defined)) roots.set(defined, root);
    }
  }

  write(method: string, node: Decoded, schema: Schema, param: Param, tokens: Tokens, name: string, root: Root): void {
    if (root.buffer !== null) (this.buffers.get(root.buffer) as BufferState).written = true;
    if (root.writable) return;
    this.report("ptg-undeclared-mutation", tokens,
      `method ${repr(method)}, node ${repr(node["name"] as string)}: ${schema.qualified} writes its argument ` +
        `${repr(param.name)} in place, and ${repr(name)} is ${root.label} or a view of it, which ` +
        `the method does not declare as state (${root.why})`);
  }

  /** Every call node of the node's subgraphs, against the table. */
  subgraphs(method: string, node: Decoded, here: Tokens): void {
    const inputs = node["inputs"] as Decoded[];
    for (let k = 0; k < inputs.length; k++) {
      const value = argValue(inputs[k] as Decoded);
      if (value === null || value.member !== "GraphArg" || value.value === null) continue;
      const inner: Tokens = [...here, "inputs", k, "arg", "value", "graph"];
      const nodes = (value.value["graph"] as Decoded)["nodes"] as Decoded[];
      for (let j = 0; j < nodes.length; j++) {
        const sub = nodes[j] as Decoded;
        const at: Tokens = [...inner, "nodes", j];
        if (sub["op_kind"] === this.callFunction) this.schema(method, sub, at);
        this.subgraphs(method, sub, at);
      }
    }
  }

  unwrittenBuffers(methods: Decoded[]): void {
    // Updated by an output spec of any method, before or after the one reading it.
    const updated = new Set<string>();
    for (const m of methods) {
      for (const spec of m["output_specs"] as Decoded[]) {
        if (spec["kind"] === this.bufferMutation) updated.add(spec["target"] as string);
      }
    }
    for (const [fqn, buffer] of this.buffers) {
      if (!buffer.read || buffer.written || updated.has(fqn)) continue;
      const method = (methods[buffer.method] as Decoded)["name"] as string;
      this.report("ptg-buffer-never-written", ["methods", buffer.method, "mutable_buffers", buffer.index],
        `method ${repr(method)}: non-persistent buffer ${repr(buffer.name)} (fqn ${repr(fqn)}) is read, and no ` +
          "method writes it: a runtime zero-initialises it, so every read sees zeros, whatever it held when " +
          "the model was exported",
        "warning");
    }
  }
}

function hasCalls(nodes: Decoded[], callFunction: number): boolean {
  return nodes.some(
    (n) =>
      n["op_kind"] === callFunction ||
      (n["inputs"] as Decoded[]).some((a) => {
        const value = argValue(a);
        return value?.member === "GraphArg" && value.value !== null &&
          hasCalls((value.value["graph"] as Decoded)["nodes"] as Decoded[], callFunction);
      }),
  );
}

/** The operator rules of every method, in program order (each call node: its operator,
 * then what it writes; then its subgraphs), then the buffers no method writes; within the
 * findings budget (ptn.program.effects.graph_findings). */
export function graphFindings(program: Decoded, layout: ProgramLayout, table: () => OperatorTable): RawFinding[] {
  const methods = program["methods"] as Decoded[];
  const callFunction = layout.enums["OpKind"]?.["CALL_FUNCTION"] ?? 0;
  if (!methods.some((m) => hasCalls((m["graph"] as Decoded)["nodes"] as Decoded[], callFunction))) return [];
  const walk = new Walk(table(), layout);
  methods.forEach((method, i) => walk.method(i, method));
  walk.unwrittenBuffers(methods);
  return walk.out.finish();
}
