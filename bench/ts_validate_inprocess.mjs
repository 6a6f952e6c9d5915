// Time validatePackage alone, in one Node process (no start-up, no import): the child of
// bench/bench_ts_validate.py.
//
//   node bench/ts_validate_inprocess.mjs DIST (fast|deep) REPS PATH
//
// DIST is the built binding's dist/ directory. One warm-up call, then REPS calls, each
// opening the file afresh (as a caller validating one file does); prints one JSON line:
// {"seconds": median, "first": the warm-up call, "valid": verdict}.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [dist, mode, repsText, path] = process.argv.slice(2);
const { validatePackage } = await import(pathToFileURL(join(dist, "index.js")).href);
const { nodeFileSource } = await import(pathToFileURL(join(dist, "node.js")).href);
const deep = mode === "deep";

async function once() {
  const source = nodeFileSource(path);
  try {
    const start = process.hrtime.bigint();
    const report = await validatePackage(source, { deep });
    return [Number(process.hrtime.bigint() - start) / 1e9, report];
  } finally {
    await source.close();
  }
}

const [first, report] = await once();
const times = [];
for (let i = 0; i < Number(repsText); i++) times.push((await once())[0]);
times.sort((a, b) => a - b);
const mid = times.length >> 1;
const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
process.stdout.write(`${JSON.stringify({ seconds: median, first, valid: report.valid })}\n`);
