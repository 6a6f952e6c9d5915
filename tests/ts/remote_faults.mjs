// Faults of remote reads in the TypeScript binding, driven by tests/test_ts_remote.py:
//   node remote_faults.mjs DIST_DIR DIR
// DIR holds ok.ptn, claim-after.ptn and claim-before.ptn. Prints one JSON object: for each
// case the rules found (or "pending" when a check did not settle within GUARD_MS) and the
// bytes read.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const [dist, dir] = process.argv.slice(2);
const ptn = await import(pathToFileURL(`${dist}/index.js`).href);
const GUARD_MS = 10_000;
const file = (name) => readFileSync(`${dir}/${name}`);
const ok = file("ok.ptn");
const sockets = new Set();

const server = createServer((req, res) => {
  const [, mode] = req.url.split("/");
  if (mode === "silent") return; // never answers
  if (mode === "drip") {
    // A status line, then one header byte every 100 ms, without end.
    res.socket.write("HTTP/1.1 206 Partial Content\r\nX-Drip: ");
    const timer = setInterval(() => res.socket.writable && res.socket.write("a"), 100);
    res.socket.on("close", () => clearInterval(timer));
    return;
  }
  const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  const start = Number(range[1]);
  const end = Math.min(Number(range[2]), ok.length - 1);
  const piece = ok.subarray(start, end + 1);
  const headers = { "Content-Range": `bytes ${start}-${end}/${ok.length}`, "Content-Length": piece.length };
  if (mode === "gzip") headers["Content-Encoding"] = "gzip"; // over plain bytes
  res.writeHead(206, headers);
  res.end(piece);
});
server.on("connection", (s) => {
  sockets.add(s);
  s.on("close", () => sockets.delete(s));
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${server.address().port}`;

async function settled(work) {
  let timer;
  const guard = new Promise((resolve) => {
    timer = setTimeout(() => resolve("pending"), GUARD_MS);
  });
  const result = await Promise.race([work.then((r) => r.findings.map((f) => f.rule)), guard]);
  clearTimeout(timer);
  return result;
}

function counting(source) {
  const counter = { bytes: 0 };
  return [{ name: source.name, size: () => source.size(), read: (o, n) => ((counter.bytes += n), source.read(o, n)) }, counter];
}

const out = {};
out.gzip = await settled(ptn.validatePackage(ptn.urlSource(`${base}/gzip/ok.ptn`)));
out.silent = await settled(ptn.validatePackage(ptn.urlSource(`${base}/silent/ok.ptn`, { timeoutMs: 300 })));
out.drip = await settled(ptn.validatePackage(ptn.urlSource(`${base}/drip/ok.ptn`, { timeoutMs: 300 })));
out.signal = await settled(
  ptn.validatePackage(ptn.urlSource(`${base}/silent/ok.ptn`, { signal: AbortSignal.timeout(300) })),
);
out.ok = await settled(ptn.validatePackage(ptn.urlSource(`${base}/ok/ok.ptn`, { timeoutMs: 5000 })));
for (const name of ["claim-after", "claim-before"]) {
  const data = file(`${name}.ptn`);
  const [source, counter] = counting(ptn.bytesSource(data, name));
  out[name] = (await ptn.validatePackage(source)).findings.map((f) => f.rule);
  out[`${name}_bytes`] = counter.bytes;
  out[`${name}_size`] = data.length;
}
for (const s of sockets) s.destroy();
server.close();
process.stdout.write(JSON.stringify(out));
