// Build web/dist/ptn-inspector.html: one self-contained page (script and style inline,
// no external requests). Rule links go to the
// rendered spec of the docs site: mkdocs.yml's site_url (ptn/cli/links.py's DOCS_URL), or
// $PTN_DOCS_URL when set. The wheel ships the default build as ptn/_web/ptn-inspector.html
// (`npm run ship` copies it there; tests/test_web_page.py checks that copy is current).
//
//   npm ci && npm run build                                  # links to the published site
//   PTN_DOCS_URL=http://127.0.0.1:8000/ npm run build        # links to `mkdocs serve`
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist", "ptn-inspector.html");

/** The docs site's base URL, with its trailing slash. */
function docsUrl() {
  const site = readFileSync(join(here, "..", "mkdocs.yml"), "utf8").match(/^site_url: (\S+)$/m);
  const base = process.env.PTN_DOCS_URL || site[1];
  return base.endsWith("/") ? base : `${base}/`;
}

const bundle = await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  write: false,
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  define: {
    __SPEC_URL__: JSON.stringify(`${docsUrl()}spec/`),
  },
});
// "</script" inside the bundle would end the inline script early.
const script = bundle.outputFiles[0].text.replaceAll("</script", "<\\/script");
const style = readFileSync(join(here, "src", "style.css"), "utf8");
const hash = (text) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
// Only this script and this style run; fetches go only where the user points (connect-src).
const csp = [
  "default-src 'none'",
  `script-src ${hash(script)}`,
  `style-src ${hash(style)}`,
  "connect-src *",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");
const page = readFileSync(join(here, "src", "page.html"), "utf8")
  .replace("__CSP__", () => csp)
  .replace("__STYLE__", () => style)
  .replace("__SCRIPT__", () => script);
const ship = process.argv.includes("--ship");
if (ship && process.env.PTN_DOCS_URL) throw new Error("--ship builds the published links: unset PTN_DOCS_URL");
const outs = ship ? [out, join(here, "..", "ptn", "_web", "ptn-inspector.html")] : [out];
for (const path of outs) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, page);
  console.log(`wrote ${path} (${page.length} bytes)`);
}
