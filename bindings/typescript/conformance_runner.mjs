// Metadata conformance runner of the TypeScript binding (the protocol of tools/conformance):
//   node conformance_runner.mjs FILE...
// prints one line per file, "<path>\tvalid" or "<path>\tinvalid\t<rule-id>".
// Needs the build: `npm ci && npx tsc` in this directory (writes dist/).
import { readFileSync } from "node:fs";

import { Metadata, PtnError } from "./dist/index.js";

const lines = [];
for (const path of process.argv.slice(2)) {
  let data;
  try {
    data = readFileSync(path);
  } catch {
    lines.push(`${path}\tinvalid\tptn-io-error\n`);
    continue;
  }
  try {
    Metadata.parse(data);
    lines.push(`${path}\tvalid\n`);
  } catch (err) {
    if (err instanceof PtnError) {
      lines.push(`${path}\tinvalid\t${err.rule}\n`);
    } else {
      // Not a rule of the spec: a bug of the binding. Make it visible and fail.
      lines.push(`${path}\tinvalid\tinternal-error\n`);
      console.error(path, err);
      process.exitCode = 1;
    }
  }
}
process.stdout.write(lines.join(""));
