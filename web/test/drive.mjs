// Drive the built page in headless Chromium (the system's, never a downloaded one) and
// print, as JSON, what it shows for each package: tests/test_web_page.py asserts on it.
//
//   node web/test/drive.mjs CHROMIUM PAGE.html SCREENSHOT_DIR [url:]PACKAGE.ptn...
//
// Per package: open it through the file input (with `rows:`, only to count the rows "show
// all" shows), or with `url:` by pasting its address on a
// local HTTP server that answers range requests (and counts the bytes it sends), which runs
// the fast check; read the page, press "show all" under every summarised table, press
// "Deep check", read the page again, and save SCREENSHOT_DIR/<package name>.png. Every
// request the page made is reported too.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { chromium } from "playwright-core";

const [executablePath, pagePath, shots, ...packages] = process.argv.slice(2);
if (packages.length === 0) {
  console.error("usage: node drive.mjs CHROMIUM PAGE.html SCREENSHOT_DIR PACKAGE.ptn...");
  process.exit(2);
}
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const TIMEOUT = 60_000;

/** Everything the test checks, read from the DOM as a user sees it. */
function readPage() {
  const texts = (selector) => [...document.querySelectorAll(selector)].map((n) => n.textContent);
  const rows = (id) =>
    [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) => [...tr.cells].map((td) => td.textContent));
  const progress = document.querySelector("#progress");
  return {
    title: document.querySelector("#package-name")?.textContent ?? null,
    status: document.querySelector("#status").textContent,
    verdict: document.querySelector("#verdict")?.textContent ?? null,
    findings: [...document.querySelectorAll("ol.findings li")].map((li) => ({
      severity: li.querySelector(".severity").textContent,
      rule: li.querySelector("code").textContent,
      href: li.querySelector("a.rule")?.getAttribute("href") ?? null,
      text: li.textContent,
    })),
    members: rows("members"),
    program: document.querySelector("#program")?.textContent ?? null,
    methods: rows("methods"),
    tensors: rows("tensors"),
    metadata: rows("metadata"),
    unreadable: rows("unreadable"),
    totals: document.querySelector("#totals")?.textContent ?? null,
    summaries: texts(".summary"),
    notes: texts(".unreadable"),
    // Elements the page never creates itself: any of them came from a package's text.
    injected: document.querySelectorAll("#output img, #output b, #output script, #output iframe").length,
    progress: { hidden: progress.hidden, value: progress.value, max: progress.max },
    deepEnabled: !document.querySelector("#deep").disabled,
  };
}

/** Serves each `url:` package at /<name> with range requests and CORS; counts bytes sent. */
function rangeServer(files) {
  const served = { bytes: 0 };
  const server = createServer((req, res) => {
    const cors = {
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Allow-Headers": "Range",
      "Access-Control-Expose-Headers": "Content-Range, Content-Length",
    };
    const path = files.get(decodeURIComponent(new URL(req.url, "http://x").pathname.slice(1)));
    if (req.method === "OPTIONS") return res.writeHead(204, cors).end();
    if (path === undefined) return res.writeHead(404, cors).end();
    const size = statSync(path).size;
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
    if (!m || (m[1] === "" && m[2] === "")) return res.writeHead(200, { ...cors, "Content-Length": size }).end();
    const start = m[1] === "" ? Math.max(0, size - Number(m[2])) : Number(m[1]);
    const end = m[1] === "" || m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
    const body = Buffer.alloc(Math.max(0, end - start + 1));
    const fd = openSync(path, "r");
    readSync(fd, body, 0, body.length, start);
    closeSync(fd);
    served.bytes += body.length;
    res.writeHead(206, { ...cors, "Content-Range": `bytes ${start}-${end}/${size}`, "Content-Length": body.length });
    res.end(req.method === "HEAD" ? undefined : body);
  });
  return { server, served };
}

const urls = new Map(packages.filter((p) => p.startsWith("url:")).map((p) => [basename(p), resolve(p.slice(4))]));
const { server, served } = rangeServer(urls);
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${server.address().port}/`;

/** Wait until the status line reads `text`; on timeout, say what it read instead. */
async function waitForStatus(page, text) {
  try {
    await page.waitForFunction((t) => document.querySelector("#status").textContent === t, text);
  } catch (err) {
    const now = await page.evaluate(() => document.querySelector("#status").textContent);
    throw new Error(`waiting for status "${text}", the page says "${now}": ${err.message}`);
  }
}

const profile = mkdtempSync(join(tmpdir(), "ptn-chromium-"));
const requests = [];
const errors = [];
const results = [];
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  args: ARGS,
  headless: true,
  viewport: { width: 1100, height: 800 },
  timeout: TIMEOUT,
});
try {
  context.on("request", (request) => requests.push(request.url()));
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  page.on("pageerror", (err) => errors.push(String(err)));
  page.on("console", (msg) => msg.type() === "error" && errors.push(msg.text()));
  await page.goto(pathToFileURL(resolve(pagePath)).href);
  for (const arg of packages) {
    // `missing:NAME` pastes the address of a file the server does not have: not checked.
    if (arg.startsWith("missing:")) {
      const shown = base + encodeURIComponent(arg.slice(8));
      await page.fill("#url", shown);
      await page.click("#url-form button");
      await waitForStatus(page, `${shown} could not be read: not checked`);
      const shownPage = await page.evaluate(readPage);
      const deepDisabled = await page.evaluate(() => document.querySelector("#deep").disabled);
      results.push({ package: arg.slice(8), fast: shownPage, deepDisabled, url: shown });
      continue;
    }
    // `rows:` opens a package only to press "show all": its tables are counted, not read
    // (a table of 10^5 rows), and no deep check or screenshot is made.
    const light = arg.startsWith("rows:");
    const pkg = light ? arg.slice(5) : arg;
    const name = basename(pkg);
    const before = served.bytes;
    let shown = name;
    if (light) {
      await page.setInputFiles("#file", resolve(pkg));
      await waitForStatus(page, `fast check of ${shown} done`);
      for (const button of await page.locator("button.show-all").all()) await button.click();
      const rows = await page.evaluate(() => ({
        tensors: document.querySelectorAll("#tensors tbody tr").length,
        summaries: [...document.querySelectorAll(".summary")].map((n) => n.textContent),
      }));
      results.push({ package: name, rows });
      continue;
    }
    if (pkg.startsWith("url:")) {
      shown = base + encodeURIComponent(name);
      await page.fill("#url", shown);
      await page.click("#url-form button");
    } else {
      await page.setInputFiles("#file", resolve(pkg));
    }
    await waitForStatus(page, `fast check of ${shown} done`);
    const fast = await page.evaluate(readPage);
    const fastBytes = served.bytes - before;
    for (const button of await page.locator("button.show-all").all()) await button.click();
    const all = await page.evaluate(readPage);
    await page.click("#deep");
    await waitForStatus(page, `deep check of ${shown} done`);
    const deep = await page.evaluate(readPage);
    const screenshot = join(shots, `${name.replace(/\.ptn$/, "")}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    const size = statSync(resolve(pkg.replace(/^url:/, ""))).size;
    results.push({ package: name, fast, all, deep, screenshot, fastBytes, size });
  }
} finally {
  await context.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify({ results, requests, errors }, null, 1));
