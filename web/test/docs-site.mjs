// Open every page of the built docs site in headless Chromium (the system's, never a
// downloaded one) at a given width, and print, as JSON, what overflows the page's text
// column: tests/test_docs_site.py asserts there is nothing. It lives here because web/ holds
// the locked playwright-core that drives the browser.
//
//   node web/test/docs-site.mjs CHROMIUM SITE_DIR SCREENSHOT_DIR WIDTH
//
// The site is served over loopback HTTP (as `mkdocs serve` would), so its scripts run as in
// a reader's browser (Material wraps tables in scrolling boxes by script). Per page:
// elements whose content is wider than their box (a code line cut off, or hidden behind a
// scroll bar) or that reach past the right edge of the text column; and screenshots of the
// top of the page, its longest code block and its widest table, in SCREENSHOT_DIR.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join, relative, resolve, sep } from "node:path";

import { chromium } from "playwright-core";

const [executablePath, siteDir, shots, width] = process.argv.slice(2);
if (!width) {
  console.error("usage: node docs-site.mjs CHROMIUM SITE_DIR SCREENSHOT_DIR WIDTH");
  process.exit(2);
}
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
  ".woff2": "font/woff2",
};

const root = resolve(siteDir);
const server = createServer((request, response) => {
  let path = decodeURIComponent(new URL(request.url, "http://x").pathname);
  if (path.endsWith("/")) path += "index.html";
  const file = resolve(join(root, path));
  if (!(file === root || file.startsWith(root + sep))) {
    response.writeHead(403).end();
    return;
  }
  try {
    const body = readFileSync(file);
    response.writeHead(200, { "Content-Type": TYPES[extname(file)] ?? "application/octet-stream" });
    response.end(body);
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const base = `http://127.0.0.1:${server.address().port}/`;

/** Every page of the site: the directories holding an index.html (the home page is ""). */
function pages(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...pages(path));
    else if (name === "index.html") found.push(relative(root, dir).split(sep).join("/"));
  }
  return found.sort();
}

/** In the page: what does not fit the text column, and the elements to photograph. */
function measure() {
  const article = document.querySelector("article.md-content__inner");
  // The column's edge: Material's table wrappers reach into the article's margin by design.
  const edge = article.parentElement.getBoundingClientRect().right;
  const offenders = [];
  for (const el of article.querySelectorAll("*")) {
    const style = getComputedStyle(el);
    if (style.display === "inline" || el.closest("svg")) continue; // inline: its block is checked
    const rect = el.getBoundingClientRect();
    // Content wider than a box that hides or scrolls it: characters a reader cannot see.
    const hides = style.overflowX !== "visible";
    const cut = hides && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
    const beyond = rect.width > 0 && rect.right > edge + 1;
    if (cut || beyond) {
      offenders.push({
        tag: el.tagName.toLowerCase(),
        class: el.className && typeof el.className === "string" ? el.className : "",
        text: el.textContent.trim().slice(0, 100),
        scrollWidth: el.scrollWidth,
        clientWidth: el.clientWidth,
        right: Math.round(rect.right),
        edge: Math.round(edge),
      });
    }
  }
  const longest = (nodes, size) => nodes.reduce((best, n) => (best && size(best) >= size(n) ? best : n), null);
  const lineLength = (pre) => Math.max(...pre.textContent.split("\n").map((l) => l.length));
  const codes = [...article.querySelectorAll("pre")];
  const tables = [...article.querySelectorAll("table")];
  for (const el of article.querySelectorAll("[data-shot]")) el.removeAttribute("data-shot");
  const code = longest(codes, lineLength);
  const table = longest(tables, (t) => t.textContent.length / Math.max(1, t.rows.length));
  if (code) code.setAttribute("data-shot", "code");
  if (table) table.setAttribute("data-shot", "table");
  return {
    offenders,
    pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    column: Math.round(article.getBoundingClientRect().width),
    codes: codes.length,
    tables: tables.length,
    longestLine: code ? lineLength(code) : 0,
    nav: [...document.querySelectorAll(".md-nav--primary > .md-nav__list > .md-nav__item")].map(
      (item) => item.querySelector(":scope > label, :scope > a")?.textContent.trim() ?? "",
    ),
  };
}

const profile = mkdtempSync(join(tmpdir(), "ptn-chromium-"));
const results = [];
const errors = [];
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  args: ARGS,
  headless: true,
  viewport: { width: Number(width), height: 900 },
  timeout: 60_000,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(60_000);
  page.on("pageerror", (err) => errors.push(String(err)));
  for (const path of pages(root)) {
    await page.goto(base + (path ? `${path}/` : ""), { waitUntil: "load" });
    const name = path || "home";
    const seen = await page.evaluate(measure);
    const files = [join(shots, `${name}.png`)];
    await page.screenshot({ path: files[0] });
    for (const what of ["code", "table"]) {
      const shot = page.locator(`[data-shot="${what}"]`);
      if ((await shot.count()) === 0) continue;
      const file = join(shots, `${name}-${what}.png`);
      await shot.first().screenshot({ path: file });
      files.push(file);
    }
    results.push({ page: name, ...seen, screenshots: files });
  }
} finally {
  await context.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify({ results, errors }, null, 1));
