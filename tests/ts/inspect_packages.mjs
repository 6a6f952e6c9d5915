// inspectPackage of the TypeScript binding over files, driven by tests/test_ts_package.py:
//   node inspect_packages.mjs DIST_DIR FILE...
// prints one JSON object: file -> the inspection (fast), with bigints as numbers and JSON
// objects (Maps) as plain objects, as `ptn inspect --json` would print them.
import { pathToFileURL } from "node:url";

const [dist, ...paths] = process.argv.slice(2);
const ptn = await import(pathToFileURL(`${dist}/index.js`).href);
const { nodeFileSource } = await import(pathToFileURL(`${dist}/node.js`).href);

// An integer past 2**53 comes as its decimal string (a double would round it).
const number = (v) => (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString());
const plain = (_, v) => (typeof v === "bigint" ? number(v) : v instanceof Map ? Object.fromEntries(v) : v);
const out = {};
for (const path of paths) {
  const source = nodeFileSource(path);
  try {
    const { info } = await ptn.inspectPackage(source);
    out[path] = JSON.parse(JSON.stringify(info, plain));
  } finally {
    await source.close();
  }
}
process.stdout.write(JSON.stringify(out));
