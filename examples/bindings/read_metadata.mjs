// Read typed metadata from a whole package with the ptn TypeScript binding: from a path, a
// URL (HTTP Range requests) or the package's bytes. Only the zip directory and metadata.json
// are read: a few KiB, whatever the size of the constants.
//
//   (cd generated/typescript && npm ci && npx tsc)
//   node examples/bindings/read_metadata.mjs examples/tiny-llm.ptn         # 128 2 3
//   node examples/bindings/read_metadata.mjs https://host/model.ptn
//   node examples/bindings/read_metadata.mjs - < examples/tiny-llm.ptn     # 128 2 3
import { readFileSync } from "node:fs";

import { PtnError, readPackageMetadata, urlSource } from "../../generated/typescript/dist/index.js";
import { nodeFileSource } from "../../generated/typescript/dist/node.js";

const where = process.argv[2];
if (where === undefined) {
  console.error("usage: node read_metadata.mjs PACKAGE.ptn|URL   (- reads the package from standard input)");
  process.exit(2);
}
// A local file is read in place (close it when done); "-" reads the bytes of a package.
const file = where === "-" || /^https?:\/\//.test(where) ? null : nodeFileSource(where);
const source = file ?? (where === "-" ? readFileSync(0) : urlSource(where));
try {
  const pkg = await readPackageMetadata(source);
  // bigint: an integer is never read as a float or a bool, and never rounded.
  const context = pkg.metadataInt("get_max_context_len", { minimum: 1n });
  const eos = pkg.metadataInts("get_eos_ids");
  console.log(`${context} ${eos.join(" ")}`);
} catch (err) {
  if (!(err instanceof PtnError)) throw err;
  // err.rule is the rule id of spec.md: metadata-missing-name, metadata-wrong-kind, ...
  console.error(`${where}: ${err.message}`);
  process.exitCode = 1;
} finally {
  await file?.close();
}
