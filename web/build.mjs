// Build web/dist/ptn-inspector.html: one self-contained page (script and style inline,
// no external requests), with the rule anchors of spec.md baked in.
//
//   npm ci && npm run build                     # links rules to ../../spec.md (a checkout)
//   PTN_SPEC_URL=https://example.org/spec.md npm run build   # where a published copy links
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist", "ptn-inspector.html");

/** rule id -> the anchor a Markdown renderer (GitHub's slugs) gives its spec.md heading. */
function specAnchors() {
  const spec = readFileSync(join(here, "..", "spec.md"), "utf8");
  const anchors = {};
  for (const [, rule, severity] of spec.matchAll(/^#### `([a-z0-9-]+)` \((error|warning)\)$/gm)) {
    anchors[rule] = `${rule}-${severity}`;
  }
  return anchors;
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
    __SPEC_URL__: JSON.stringify(process.env.PTN_SPEC_URL || "../../spec.md"),
    __SPEC_ANCHORS__: JSON.stringify(specAnchors()),
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
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, page);
console.log(`wrote ${out} (${page.length} bytes)`);
