// Drive the built page in headless Chromium (the system's, never a downloaded one) and
// print, as JSON, what it shows for each package: tests/test_web_page.py asserts on it.
//
//   node web/test/drive.mjs CHROMIUM PAGE.html SCREENSHOT_DIR PACKAGE.ptn...
//
// Per package: open it through the file input (fast check), read the page, press "show
// all" under every summarised table, press "Deep check", read the findings again, and
// save SCREENSHOT_DIR/<package name>.png. Every request the page made is reported too.
import { mkdtempSync, rmSync } from "node:fs";
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
  const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) => [...tr.cells].map((td) => td.textContent));
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
    tensors: rows("tensors"),
    metadata: rows("metadata"),
    totals: document.querySelector("#totals")?.textContent ?? null,
    summaries: texts(".summary"),
    progress: { hidden: document.querySelector("#progress").hidden, value: document.querySelector("#progress").value, max: document.querySelector("#progress").max },
    deepEnabled: !document.querySelector("#deep").disabled,
  };
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
  for (const pkg of packages) {
    const name = basename(pkg);
    await page.setInputFiles("#file", resolve(pkg));
    await page.waitForFunction((n) => document.querySelector("#status").textContent === `fast check of ${n} done`, name);
    const fast = await page.evaluate(readPage);
    for (const button of await page.locator("button.show-all").all()) await button.click();
    const all = await page.evaluate(readPage);
    await page.click("#deep");
    await page.waitForFunction((n) => document.querySelector("#status").textContent === `deep check of ${n} done`, name);
    const deep = await page.evaluate(readPage);
    const screenshot = join(shots, `${name.replace(/\.ptn$/, "")}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    results.push({ package: name, fast, all, deep, screenshot });
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify({ results, requests, errors }, null, 1));
