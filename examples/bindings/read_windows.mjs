// Read get_windows from a package's metadata.json with the ptn TypeScript binding.
//
//   (cd generated/typescript && npm ci && npx tsc)
//   node examples/bindings/read_windows.mjs tests/vectors/metadata/valid/llm_full.json   # 512 0 512 0
//   unzip -p model.ptn metadata.json | node examples/bindings/read_windows.mjs -
import { readFileSync } from "node:fs";

import { Metadata, PtnError } from "../../generated/typescript/dist/index.js";

const path = process.argv[2];
if (path === undefined) {
  console.error("usage: node read_windows.mjs METADATA_JSON   (- reads standard input)");
  process.exit(2);
}
try {
  const metadata = Metadata.parse(readFileSync(path === "-" ? 0 : path));
  // get_windows -> windows(): bigint[], or undefined when the package does not publish it.
  const windows = metadata.windows();
  console.log(windows === undefined ? "no get_windows" : windows.join(" "));
} catch (err) {
  if (!(err instanceof PtnError)) throw err;
  // err.rule is the rule id of spec.md, err.pointer a JSON pointer into the member.
  console.error(`${path}: ${err.message}`);
  process.exitCode = 1;
}
