// Byte sources of the TypeScript package validator, driven by tests/test_ts_package.py:
//   node package_sources.mjs DIST_DIR SMALL.ptn BIG.ptn
// prints one JSON object of observations (bytes read, reports, progress, inspection).
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const [dist, smallPath, bigPath] = process.argv.slice(2);
const ptn = await import(pathToFileURL(`${dist}/index.js`).href);
const { nodeFileSource } = await import(pathToFileURL(`${dist}/node.js`).href);

const files = { small: readFileSync(smallPath), big: readFileSync(bigPath) };
let served = 0; // body bytes the server wrote
let requests = 0;

const server = createServer((req, res) => {
  requests += 1;
  const [, mode, name] = req.url.split("/");
  const body = files[name];
  if (mode === "loop") {
    res.writeHead(302, { Location: req.url });
    return res.end();
  }
  if (mode === "redirect") {
    res.writeHead(302, { Location: `/range/${name}` });
    return res.end();
  }
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
  if (mode === "norange" || !range) {
    // Ignore Range: 200 with the whole file, written in pieces while the client reads.
    res.writeHead(200, { "Content-Length": body.length });
    let at = 0;
    const pump = () => {
      while (at < body.length) {
        const piece = body.subarray(at, at + 65536);
        at += piece.length;
        served += piece.length;
        if (!res.write(piece)) return res.once("drain", pump);
      }
      res.end();
    };
    res.on("close", () => { at = body.length; });
    return pump();
  }
  let start;
  let end;
  if (range[1] === "") {
    start = Math.max(0, body.length - Number(range[2]));
    end = body.length - 1;
  } else {
    start = Number(range[1]);
    end = range[2] === "" ? body.length - 1 : Math.min(Number(range[2]), body.length - 1);
  }
  const piece = body.subarray(start, end + 1);
  served += piece.length;
  res.writeHead(206, { "Content-Range": `bytes ${start}-${end}/${body.length}`, "Content-Length": piece.length });
  res.end(piece);
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${server.address().port}`;

function counting(source) {
  const counter = { bytes: 0, reads: 0 };
  return [
    {
      name: source.name,
      size: () => source.size(),
      async read(offset, length) {
        counter.bytes += length;
        counter.reads += 1;
        return source.read(offset, length);
      },
    },
    counter,
  ];
}

const strip = (report) => report.findings.map((f) => [f.rule, f.severity, f.member, f.pointer]);
const out = {};
for (const name of ["small", "big"]) {
  const path = name === "small" ? smallPath : bigPath;
  const file = nodeFileSource(path);
  const [counted, counter] = counting(file);
  const fast = await ptn.validatePackage(counted, {});
  out[`${name}_fast_bytes`] = counter.bytes;
  const progress = [];
  const deep = await ptn.validatePackage(file, { deep: true, onProgress: (d, t) => progress.push([d, t]) });
  await file.close();
  out[`${name}_size`] = files[name].length;
  out[`${name}_fast`] = strip(fast);
  out[`${name}_deep`] = strip(deep);
  out[`${name}_progress`] = [progress.length, progress[0], progress.at(-1)];
  out[`${name}_progress_monotone`] = progress.every((p, i) => i === 0 || p[0] >= progress[i - 1][0]);
  const blob = ptn.blobSource(new Blob([files[name]]), "blob.ptn");
  out[`${name}_blob_fast`] = strip(await ptn.validatePackage(blob));
  out[`${name}_blob_deep`] = strip(await ptn.validatePackage(blob, { deep: true }));
  served = 0;
  requests = 0;
  const url = await ptn.validatePackage(ptn.urlSource(`${base}/range/${name}`));
  out[`${name}_url_fast`] = strip(url);
  out[`${name}_url_fast_served`] = served;
  out[`${name}_url_fast_requests`] = requests;
  out[`${name}_url_deep`] = strip(await ptn.validatePackage(ptn.urlSource(`${base}/redirect/${name}`), { deep: true }));
}
served = 0;
const ignored = await ptn.validatePackage(ptn.urlSource(`${base}/norange/big`));
await new Promise((resolve) => setTimeout(resolve, 200));
out.norange = ignored.findings.map((f) => f.rule);
out.norange_served = served;
out.loop = (await ptn.validatePackage(ptn.urlSource(`${base}/loop/small`, { maxRedirects: 3 }))).findings.map(
  (f) => f.rule,
);
out.missing = (await ptn.validatePackage(nodeFileSource(`${smallPath}.missing`))).findings.map((f) => f.rule);
const { report, info } = await ptn.inspectPackage(nodeFileSource(smallPath));
out.inspect_valid = report.valid;
out.inspect = JSON.parse(JSON.stringify(info, (_, v) => (typeof v === "bigint" ? Number(v) : v)));
server.close();
process.stdout.write(JSON.stringify(out));
