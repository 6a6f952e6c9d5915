// packageSha256 of the TypeScript binding over files, driven by tests/test_ts_package.py:
//   node sha256_packages.mjs DIST_DIR FILE...
// prints one JSON object: file -> [portable (4 MiB pieces), portable (7-byte pieces),
// Node's hash (nodeSha256)], each the SHA-256 in lowercase hex.
import { pathToFileURL } from "node:url";

const [dist, ...paths] = process.argv.slice(2);
const ptn = await import(pathToFileURL(`${dist}/index.js`).href);
const { nodeFileSource, nodeSha256 } = await import(pathToFileURL(`${dist}/node.js`).href);

const out = {};
for (const path of paths) {
  const source = nodeFileSource(path);
  try {
    out[path] = [
      await ptn.packageSha256(source),
      await ptn.packageSha256(source, { chunkSize: 7 }),
      await ptn.packageSha256(source, { hasher: nodeSha256 }),
    ];
  } finally {
    await source.close();
  }
}
process.stdout.write(JSON.stringify(out));
