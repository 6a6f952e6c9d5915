// A call node against its operator's schema (ptg-operator-schema-mismatch; spec section
// 4.4; ptn.program.calls): each argument names a parameter of the schema, at most once,
// with a value of a kind its type takes (and, for the few parameters the table holds to
// some values, one of those); every required parameter is given; the node's outputs fit
// what the operator returns. The string enums below are those ptn.program.calls accepts
// (tests/test_ts_operators.py compares the two).

import type { Decoded, ProgramLayout, UnionValue } from "./program.js";
import { NodeProblem, type Param, type Schema } from "./program_operators.js";
import { repr } from "./pyrepr.js";

type Tokens = (string | number)[];
const MISMATCH = "ptg-operator-schema-mismatch";

export const LAYOUTS: readonly string[] = [
  "torch.strided",
  "torch.sparse_coo",
  "torch.sparse_csr",
  "torch.sparse_csc",
  "torch.sparse_bsr",
  "torch.sparse_bsc",
  "torch._mkldnn",
  "torch.jagged",
];
export const MEMORY_FORMATS: readonly string[] = [
  "torch.contiguous_format",
  "torch.preserve_format",
  "torch.channels_last",
  "torch.channels_last_3d",
];
/** A dtype written as a string, by the name torch prints (its ScalarType: ptn.program.calls). */
export const DTYPE_NAMES: readonly string[] = [
  "torch.uint8",
  "torch.int8",
  "torch.int16",
  "torch.int32",
  "torch.int64",
  "torch.float16",
  "torch.float32",
  "torch.float64",
  "torch.bool",
  "torch.bfloat16",
  "torch.uint16",
  "torch.uint32",
  "torch.uint64",
];
/** The devices a Device string may name (the table holds every device to "cpu"). */
export const DEVICE = /^(cpu|cuda|mps|xpu|meta)(:[0-9]{1,4})?$/;

const ENUM_STRINGS: ReadonlyMap<string, readonly string[]> = new Map([
  ["Layout", LAYOUTS],
  ["MemoryFormat", MEMORY_FORMATS],
  ["ScalarType", DTYPE_NAMES],
]);
/** Type -> the ArgumentValue members it takes. */
const SCALARS: ReadonlyMap<string, readonly string[]> = new Map([
  ["Tensor", ["TensorArg"]],
  ["int", ["IntArg"]],
  ["float", ["FloatArg", "IntArg"]],
  ["bool", ["BoolArg"]],
  ["Scalar", ["IntArg", "FloatArg", "BoolArg"]],
  ["str", ["StringArg"]],
  ["ScalarType", ["ScalarTypeArg", "StringArg"]],
  ["Layout", ["StringArg"]],
  ["MemoryFormat", ["StringArg"]],
  ["Device", ["StringArg"]],
]);
/** Element type of a list -> the ArgumentValue members it takes. */
const LISTS: ReadonlyMap<string, readonly string[]> = new Map([
  ["int", ["IntListArg"]],
  ["float", ["FloatListArg"]],
  ["bool", ["BoolListArg"]],
  ["Tensor", ["TensorListArg"]],
  ["Tensor?", ["OptionalTensorListArg", "TensorListArg"]],
  ["Scalar", ["IntListArg", "FloatListArg"]],
]);
/** Returned type -> the OutputValueKind names a node's output may have for it. */
export const RETURN_KINDS: ReadonlyMap<string, readonly string[]> = new Map([
  ["Tensor", ["TENSOR"]],
  ["Tensor?", ["TENSOR"]],
  ["Tensor[]", ["TENSOR_LIST"]],
  ["int", ["INT"]],
  ["float", ["FLOAT"]],
  ["bool", ["BOOL"]],
  ["Scalar", ["INT", "FLOAT", "BOOL"]],
]);

/** The name of `value` in `enum` (the first that has it), or null (ProgramLayout.enum_name). */
export function enumName(layout: ProgramLayout, which: string, value: number): string | null {
  for (const [name, v] of Object.entries(layout.enums[which] ?? {})) if (v === value) return name;
  return null;
}

/** An argument's value, as the messages name its kind. */
export function kindName(value: UnionValue | null): string {
  if (value === null) return "an argument holding no value";
  if (value.member === null) return `an ArgumentValue member ptn does not know (type ${value.typeCode})`;
  return `a ${value.member}`;
}

/** Why `value` is of no kind `param`'s type takes; null when it is. */
export function valueProblem(param: Param, value: UnionValue | null, layout: ProgramLayout): string | null {
  let kind = param.type;
  if (kind.endsWith("?")) {
    if (value?.member === "NoneArg") return null;
    kind = kind.slice(0, -1);
  }
  let allowed: readonly string[];
  if (kind.endsWith("[]")) {
    allowed = LISTS.get(kind.slice(0, -2)) ?? [];
    if (param.size !== null && kind === "int[]") allowed = [...allowed, "IntArg"];
  } else {
    allowed = SCALARS.get(kind) ?? [];
  }
  if (allowed.length === 0) return `is ${kindName(value)}, and ptn passes no value of type ${param.type}`;
  if (value === null || value.member === null || !allowed.includes(value.member)) {
    return `is ${kindName(value)}; ${param.type} takes ` + allowed.map((c) => `a ${c}`).join(" or ");
  }
  const problem = contentProblem(kind, value.member, value.value ?? {}, layout);
  if (problem === null && param.allowed !== null && !isAllowed(value.member, value.value ?? {}, param.allowed)) {
    const listed = param.allowed.map((v) => v.text).join(" or ");
    return `may only be ${listed}: the operator table holds it there to keep the call pure`;
  }
  return problem;
}

/** Whether a literal value is one of `allowed` (a symbolic one never is). */
function isAllowed(member: string, v: Decoded, allowed: readonly { value: unknown }[]): boolean {
  switch (member) {
    case "NoneArg":
      return allowed.some((a) => a.value === null);
    case "BoolArg":
      return !v["ref"] && allowed.some((a) => a.value === v["value"]);
    case "IntArg": {
      const n = v["value"] as bigint;
      return !v["ref"] && allowed.some((a) => typeof a.value === "number" && Number.isInteger(a.value) && BigInt(a.value) === n);
    }
    case "FloatArg":
      return !v["ref"] && allowed.some((a) => typeof a.value === "number" && a.value === v["value"]);
    case "StringArg":
      return allowed.some((a) => a.value === v["value"]);
    default:
      return false;
  }
}

function contentProblem(kind: string, member: string, v: Decoded, layout: ProgramLayout): string | null {
  switch (member) {
    case "StringArg": {
      const text = v["value"] as string;
      if (kind === "Device") return DEVICE.test(text) ? null : `is ${repr(text)}, which names no device`;
      const names = ENUM_STRINGS.get(kind);
      if (names !== undefined && !names.includes(text)) {
        return `is ${repr(text)}, which is no ${kind} ptn knows (${names.slice(0, 4).join(", ")}, ...)`;
      }
      return null;
    }
    case "ScalarTypeArg": {
      const code = v["value"] as number;
      return enumName(layout, "ScalarType", code) === null
        ? `is ScalarType code ${code}, which the program layout does not list`
        : null;
    }
    case "IntListArg": {
      const values = v["values"] as unknown[];
      const refs = v["refs"] as unknown[];
      return refs.length && refs.length !== values.length ? `has ${values.length} values but ${refs.length} refs` : null;
    }
    case "OptionalTensorListArg": {
      const names = v["names"] as unknown[];
      const present = v["has_value"] as unknown[];
      return present.length !== names.length ? `has ${names.length} names but ${present.length} has_value flags` : null;
    }
    default:
      return null;
  }
}

/** Check that `node` calls `schema` as it takes (ptn.program.calls.bind, without the
 * binding it returns); throw a NodeProblem (ptg-operator-schema-mismatch) saying which
 * argument does not fit and why. */
export function bind(node: Decoded, schema: Schema, layout: ProgramLayout): void {
  const params = schema.params;
  const byName = new Map<string, number>();
  params.forEach((p, i) => byName.set(p.name, i));
  const given = new Set<number>();
  let named = false;
  const inputs = node["inputs"] as Decoded[];
  for (let k = 0; k < inputs.length; k++) {
    const arg = inputs[k] as Decoded;
    const at: Tokens = ["inputs", k];
    const value = (arg["arg"] as Decoded)["value"] as UnionValue | null;
    if (value?.member === "GraphArg") {
      throw new NodeProblem(MISMATCH, [...at, "arg", "value"], `argument ${k} is a subgraph: no ATen operator takes one`);
    }
    const name = arg["name"] as string;
    let index: number;
    if (name) {
      named = true;
      const found = byName.get(name);
      if (found === undefined) {
        const known = params.map((p) => p.name).join(", ") || "none";
        throw new NodeProblem(MISMATCH, [...at, "name"],
          `${schema.qualified} has no argument ${repr(name)} (its arguments: ${known})`);
      }
      index = found;
    } else {
      if (named) throw new NodeProblem(MISMATCH, at, `argument ${k} is positional but follows named ones`);
      index = k;
      if (index >= params.length || (params[index] as Param).kwargOnly) {
        throw new NodeProblem(MISMATCH, at, `argument ${k} is positional, and ${schema.qualified} takes fewer`);
      }
    }
    const param = params[index] as Param;
    if (given.has(index)) throw new NodeProblem(MISMATCH, at, `argument ${repr(param.name)} is given twice`);
    const why = valueProblem(param, value, layout);
    if (why !== null) throw new NodeProblem(MISMATCH, [...at, "arg", "value"], `argument ${repr(param.name)} ${why}`);
    given.add(index);
  }
  params.forEach((param, index) => {
    if (param.required && !given.has(index)) {
      throw new NodeProblem(MISMATCH, ["inputs"], `${schema.qualified} needs argument ${repr(param.name)}`);
    }
  });
  checkOutputs(node, schema, layout);
}

function checkOutputs(node: Decoded, schema: Schema, layout: ProgramLayout): void {
  const outs = node["outputs"] as Decoded[];
  if (outs.length && outs.length !== schema.returns.length) {
    throw new NodeProblem(MISMATCH, ["outputs"],
      `the node defines ${outs.length} outputs; ${schema.qualified} returns ${schema.returns.length}`);
  }
  const kinds = layout.enums["OutputValueKind"] ?? {};
  for (let o = 0; o < Math.min(outs.length, schema.returns.length); o++) {
    const kind = (outs[o] as Decoded)["kind"] as number;
    const returned = (schema.returns[o] as Schema["returns"][number]).type;
    const names = RETURN_KINDS.get(returned) ?? [];
    if (!names.some((n) => kinds[n] === kind)) {
      const said = enumName(layout, "OutputValueKind", kind) ?? `kind code ${kind}`;
      throw new NodeProblem(MISMATCH, ["outputs", o, "kind"],
        `output ${o} is a ${said}; ${schema.qualified} returns a ${returned} there`);
    }
  }
}

/** The message of a finding about `node`: where, then the problem. */
export function nodeError(method: string, node: Decoded, problem: NodeProblem): string {
  return `method ${repr(method)}, node ${repr(node["name"] as string)}: ${problem.message}`;
}
