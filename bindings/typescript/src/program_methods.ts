// Each method of a decoded program as `ptn inspect --json` lists it (ptn.program.methods):
// inputs, outputs (the USER_OUTPUT output specs, else the graph's outputs), the constants it
// binds and its mutable buffers, each tensor with its dtype and shape. A static dimension is
// its integer, a dynamic one "min..max" ("min.." when unbounded above).

import type { Decoded, ProgramLayout, UnionValue } from "./program.js";

/** A tensor a method takes or gives; dtype and shape null when the graph gives no metadata. */
export interface ValueRow {
  name: string;
  dtype: string | null;
  /** bigint for a static dimension, "min..max" for a dynamic one. */
  shape: (bigint | string)[] | null;
}

/** A constant a method binds (a NamedTensorRef). */
export interface ConstantRow extends ValueRow {
  data_key: string;
  mutated: boolean;
  /** The quantization scheme ("AffineGroup", "PackedQuant", "unknown"), or null. */
  quant: string | null;
}

/** A buffer with no bytes in the package (zeros at load). */
export interface BufferRow extends ValueRow {
  fqn: string;
}

/** One method, as `ptn inspect --json` lists it under "methods". */
export interface MethodRow {
  name: string;
  inputs: ValueRow[];
  outputs: ValueRow[];
  constants: ConstantRow[];
  mutable_buffers: BufferRow[];
}

interface Dim {
  min: bigint;
  max: bigint;
}

interface Meta {
  dtype: number;
  sizes: Dim[];
  quant: Decoded | null;
}

function dim(d: Dim): bigint | string {
  if (d.min === d.max) return d.min;
  return d.max >= 0n ? `${d.min}..${d.max}` : `${d.min}..`;
}

/** The rows of every method of `program`, in its order. */
export function methodRows(program: Decoded, layout: ProgramLayout): MethodRow[] {
  const dtypeName = new Map(layout.safetensorsDtype);
  // The layout is generated from schema/program.layout.json, which names both enums.
  const scalarName = new Map(Object.entries(layout.enums["ScalarType"] ?? {}).map(([k, v]) => [v, k]));
  const userOutput = layout.enums["OutputKind"]?.["USER_OUTPUT"];
  const tensor = (meta: Meta | undefined): { dtype: string | null; shape: (bigint | string)[] | null } =>
    meta === undefined
      ? { dtype: null, shape: null }
      : {
          dtype: dtypeName.get(meta.dtype) ?? scalarName.get(meta.dtype) ?? `dtype code ${meta.dtype}`,
          shape: meta.sizes.map(dim),
        };
  const quant = (meta: Meta): string | null => {
    const scheme = meta.quant === null ? null : (meta.quant["scheme"] as UnionValue | null);
    return scheme === null ? null : (scheme.member ?? "unknown");
  };
  return (program["methods"] as Decoded[]).map((method): MethodRow => {
    const graph = method["graph"] as Decoded;
    const values = new Map<string, Meta>();
    for (const tv of graph["tensor_values"] as Decoded[]) {
      const name = tv["name"] as string;
      if (!values.has(name)) values.set(name, tv["meta"] as Meta); // the first of a repeated name
    }
    const value = (name: string): ValueRow => ({ name, ...tensor(values.get(name)) });
    const specs = method["output_specs"] as Decoded[];
    const returned = specs.length
      ? specs.filter((s) => s["kind"] === userOutput).map((s) => s["name"] as string)
      : (graph["outputs"] as string[]);
    return {
      name: method["name"] as string,
      inputs: (graph["inputs"] as string[]).map(value),
      outputs: returned.map(value),
      constants: (method["constants"] as Decoded[]).map((c): ConstantRow => {
        const meta = c["meta"] as Meta;
        return {
          name: c["name"] as string,
          data_key: c["data_key"] as string,
          mutated: c["mutated"] as boolean,
          ...tensor(meta),
          quant: quant(meta),
        };
      }),
      mutable_buffers: (method["mutable_buffers"] as Decoded[]).map((b): BufferRow => {
        const name = b["name"] as string;
        return { name, fqn: b["fqn"] as string, ...tensor(values.get(name)) };
      }),
    };
  });
}
