// ptg-undefined-value and ptg-redefined-value (spec section 4.4; ptn.program.ssa): every
// value a graph uses is defined earlier in that graph, and none is defined twice. One
// namespace per graph: its inputs, its nodes' outputs, and in a method's top graph the
// method's constants and mutable buffers; a subgraph (GraphArg) starts a namespace of its
// own. Names come from the file: every lookup by them goes through a Map or a Set. The walk
// is linear in the program (the verifier bounds its offsets).

import { Budget, raw } from "./budget.js";
import { PTG, type Decoded, type ProgramLayout, type UnionValue } from "./program.js";
import { repr } from "./pyrepr.js";
import { pointer } from "./strict_json.js";
import type { RawFinding } from "./zip_reader.js";

type Tokens = (string | number)[];
const UNDEFINED = "ptg-undefined-value";
const REDEFINED = "ptg-redefined-value";
/** Name -> what defined it first ("input 0", "node 'aten_mul_tensor'"). */
type Defined = Map<string, string>;

/** [tokens below the node, name, what uses it] of every value a node refers to. */
function* uses(node: Decoded): Generator<[Tokens, string, string]> {
  const inputs = node["inputs"] as Decoded[];
  for (let k = 0; k < inputs.length; k++) {
    const arg = inputs[k] as Decoded;
    const at: Tokens = ["inputs", k, "arg", "value"];
    const name = arg["name"] as string;
    const what = name ? `argument ${repr(name)}` : `argument ${k}`;
    const union = (arg["arg"] as Decoded)["value"] as UnionValue | null;
    if (union === null || union.value === null) continue;
    const v = union.value;
    switch (union.member) {
      case "TensorArg":
        yield [[...at, "name"], v["name"] as string, what];
        break;
      case "TensorListArg": {
        const names = v["names"] as string[];
        for (let m = 0; m < names.length; m++) yield [[...at, "names", m], names[m] as string, `${what}[${m}]`];
        break;
      }
      case "OptionalTensorListArg": {
        const names = v["names"] as string[];
        const present = v["has_value"] as boolean[];
        for (let m = 0; m < Math.min(names.length, present.length); m++) {
          if (present[m]) yield [[...at, "names", m], names[m] as string, `${what}[${m}]`];
        }
        break;
      }
      case "IntArg":
      case "FloatArg":
      case "BoolArg":
        if (v["ref"]) yield [[...at, "ref"], v["ref"] as string, what];
        break;
      case "IntListArg": {
        const refs = v["refs"] as string[];
        for (let m = 0; m < refs.length; m++) {
          if (refs[m]) yield [[...at, "refs", m], refs[m] as string, `${what}[${m}]`];
        }
        break;
      }
      default:
        break;
    }
  }
  const outputs = node["outputs"] as Decoded[];
  for (let o = 0; o < outputs.length; o++) {
    const alias = (outputs[o] as Decoded)["alias_of"] as string;
    if (alias) yield [["outputs", o, "alias_of"], alias, `output ${o}'s alias_of`];
  }
}

class Walk {
  readonly out = new Budget();
  readonly placeholder: number;
  readonly tensorList: number;
  readonly userInputMutation: number;

  constructor(layout: ProgramLayout) {
    this.placeholder = layout.enums["OpKind"]?.["PLACEHOLDER"] ?? 1;
    this.tensorList = layout.enums["OutputValueKind"]?.["TENSOR_LIST"] ?? 1;
    this.userInputMutation = layout.enums["OutputKind"]?.["USER_INPUT_MUTATION"] ?? 2;
  }

  report(tokens: Tokens, message: string, rule = UNDEFINED): void {
    if (this.out.room(rule, "error")) this.out.append(raw(rule, "error", PTG, pointer(...tokens), message));
    else this.out.skip(rule, "error");
  }

  /** Record that `what` defines `name`, or report what defined it first. */
  define(method: string, defined: Defined, tokens: Tokens, name: string, what: string): void {
    const first = defined.get(name);
    if (first === undefined) {
      defined.set(name, what);
    } else {
      this.report(tokens,
        `method ${repr(method)}: ${what} defines ${repr(name)}, which ${first} already defines; ` +
          "each value of a graph is named once",
        REDEFINED);
    }
  }

  /** [tokens below the node, name] of each value a node defines: each output's (a tensor
   * list's element names). A placeholder's output that bears the placeholder's own name
   * stands for the input, constant or buffer it places. */
  *defines(node: Decoded): Generator<[Tokens, string]> {
    const outputs = node["outputs"] as Decoded[];
    for (let o = 0; o < outputs.length; o++) {
      const out = outputs[o] as Decoded;
      const name = out["name"] as string;
      if (out["kind"] === this.tensorList) {
        const names = out["names"] as string[];
        for (let m = 0; m < names.length; m++) {
          // An element nothing uses may go unnamed.
          if (names[m]) yield [["outputs", o, "names", m], names[m] as string];
        }
      } else if (name && !(node["op_kind"] === this.placeholder && name === node["name"])) {
        yield [["outputs", o, "name"], name];
      }
    }
  }

  nodes(method: string, graph: Decoded, base: Tokens, defined: Defined): Defined {
    const where = `method ${repr(method)}`;
    const placed = new Set<string>();
    const nodes = graph["nodes"] as Decoded[];
    for (let j = 0; j < nodes.length; j++) {
      const node = nodes[j] as Decoded;
      const here: Tokens = [...base, "nodes", j];
      const name = node["name"] as string;
      if (node["op_kind"] === this.placeholder) {
        if (!defined.has(name)) {
          this.report([...here, "name"],
            `${where}: placeholder ${repr(name)} names no input, constant or mutable buffer of its graph`);
        } else if (placed.has(name)) {
          this.report([...here, "name"],
            `${where}: placeholder ${repr(name)} places a value that an earlier placeholder of its graph ` +
              "places: each value of a graph is named once",
            REDEFINED);
        }
        placed.add(name);
      }
      for (const [tokens, used, what] of uses(node)) {
        if (!defined.has(used)) {
          this.report([...here, ...tokens],
            `${where}, node ${repr(name)}: ${what} uses ${repr(used)}, which nothing before it in its graph defines`);
        }
      }
      const inputs = node["inputs"] as Decoded[];
      for (let k = 0; k < inputs.length; k++) {
        const union = ((inputs[k] as Decoded)["arg"] as Decoded)["value"] as UnionValue | null;
        if (union !== null && union.member === "GraphArg" && union.value !== null) {
          const sub = union.value["graph"] as Decoded;
          const inner: Tokens = [...here, "inputs", k, "arg", "value", "graph"];
          this.nodes(method, sub, inner, this.declared(method, inner, [[["inputs"], [], sub["inputs"] as string[], "input"]]));
        }
      }
      const what = `node ${repr(name)}`;
      for (const [tokens, defines] of this.defines(node)) this.define(method, defined, [...here, ...tokens], defines, what);
    }
    const outputs = graph["outputs"] as string[];
    for (let k = 0; k < outputs.length; k++) {
      const name = outputs[k] as string;
      if (!defined.has(name)) {
        this.report([...base, "outputs", k],
          `${where}: graph output ${k} is ${repr(name)}, which no node, input, constant or buffer of its graph defines`);
      }
    }
    return defined;
  }

  /** The values a graph starts with, group by group (its inputs; a method's constants and
   * buffers), each named once. A group: the pointer tokens before and after each one's
   * index (below `base`), the names, and what they are. */
  declared(method: string, base: Tokens, groups: [Tokens, Tokens, string[], string][]): Defined {
    const defined: Defined = new Map();
    for (const [before, after, names, kind] of groups) {
      for (let k = 0; k < names.length; k++) {
        this.define(method, defined, [...base, ...before, k, ...after], names[k] as string, `${kind} ${k}`);
      }
    }
    return defined;
  }

  method(i: number, method: Decoded): void {
    const graph = method["graph"] as Decoded;
    const name = method["name"] as string;
    const inputs = graph["inputs"] as string[];
    const defined = this.declared(name, ["methods", i], [
      [["graph", "inputs"], [], inputs, "input"],
      [["constants"], ["name"], (method["constants"] as Decoded[]).map((c) => c["name"] as string), "constant"],
      [["mutable_buffers"], ["name"], (method["mutable_buffers"] as Decoded[]).map((b) => b["name"] as string),
        "mutable buffer"],
    ]);
    this.nodes(name, graph, ["methods", i, "graph"], defined);
    const specs = method["output_specs"] as Decoded[];
    const userInputs = new Set(inputs);
    for (let k = 0; k < specs.length; k++) {
      const spec = specs[k] as Decoded;
      const at: Tokens = ["methods", i, "output_specs", k];
      const returned = spec["name"] as string;
      if (!defined.has(returned)) {
        this.report([...at, "name"],
          `method ${repr(name)}: output spec ${k} returns ${repr(returned)}, which nothing in the graph defines`);
      }
      const target = spec["target"] as string;
      if (spec["kind"] === this.userInputMutation && !userInputs.has(target)) {
        this.report([...at, "target"],
          `method ${repr(name)}: output spec ${k} updates user input ${repr(target)}, which is not an input of the graph`);
      }
    }
  }
}

/** ptg-undefined-value and ptg-redefined-value for every method, in program order (each
 * node: its uses, its subgraphs, then its definitions), within the budget. */
export function undefinedFindings(program: Decoded, layout: ProgramLayout): RawFinding[] {
  const walk = new Walk(layout);
  const methods = program["methods"] as Decoded[];
  for (let i = 0; i < methods.length; i++) walk.method(i, methods[i] as Decoded);
  return walk.out.finish();
}
