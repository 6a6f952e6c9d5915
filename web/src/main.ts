// The inspector page: pick, drop or paste a .ptn; a fast check (headers only) runs on
// open; "Deep check" streams the CRC-32 of every member. Reads go through the binding's
// byte sources (Blob slices, or HTTP range requests to the URL the user pasted): nothing
// is uploaded, and no other request is made (the page's CSP allows no other source).

import {
  blobSource,
  inspectPackage,
  urlSource,
  validatePackage,
  type ByteSource,
} from "../../generated/typescript/src/index.js";
import { el, visible } from "./dom.js";
import { findingsView, inspectionView, notChecked } from "./view.js";

function byId<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

const fileInput = byId<HTMLInputElement>("file");
const urlForm = byId<HTMLFormElement>("url-form");
const urlInput = byId<HTMLInputElement>("url");
const dropZone = byId<HTMLElement>("drop");
const deepButton = byId<HTMLButtonElement>("deep");
const progress = byId<HTMLProgressElement>("progress");
const status = byId<HTMLElement>("status");
const output = byId<HTMLElement>("output");

let current: ByteSource | null = null;
let generation = 0; // a newer open or deep check makes older results stale

function say(text: string, kind: "busy" | "done" | "failed"): void {
  status.textContent = text;
  status.className = kind;
}

function failure(err: unknown): string {
  return visible(err instanceof Error ? err.message : String(err));
}

async function open(source: ByteSource): Promise<void> {
  const mine = ++generation;
  current = source;
  deepButton.disabled = true;
  progress.hidden = true;
  output.replaceChildren();
  say(`reading ${visible(source.name)}…`, "busy");
  try {
    const { report, info } = await inspectPackage(source, { deep: false });
    if (mine !== generation) return;
    output.replaceChildren(
      el("h1", { id: "package-name" }, visible(source.name)),
      findingsView(report, false),
      ...inspectionView(info),
    );
    const unread = notChecked(report);
    if (unread) say(`${visible(source.name)} could not be read: not checked`, "failed");
    else say(`fast check of ${visible(source.name)} done`, "done");
    deepButton.disabled = unread; // nothing more can be read from it
  } catch (err) {
    if (mine === generation) say(`cannot read ${visible(source.name)}: ${failure(err)}`, "failed");
  }
}

async function deepCheck(): Promise<void> {
  if (current === null) return;
  const source = current;
  const mine = ++generation;
  deepButton.disabled = true;
  progress.hidden = false;
  progress.value = 0;
  say(`deep check of ${visible(source.name)}…`, "busy");
  try {
    const report = await validatePackage(source, {
      deep: true,
      onProgress: (done, total) => {
        if (mine !== generation) return;
        progress.max = Math.max(total, 1);
        progress.value = done;
      },
    });
    if (mine !== generation) return;
    progress.value = progress.max;
    byId("findings").replaceWith(findingsView(report, true));
    say(`deep check of ${visible(source.name)} done`, "done");
  } catch (err) {
    if (mine === generation) say(`deep check failed: ${failure(err)}`, "failed");
  } finally {
    if (mine === generation) deepButton.disabled = false;
  }
}

fileInput.addEventListener("change", () => {
  const file = fileInput.files?.[0];
  if (file !== undefined) void open(blobSource(file, file.name));
});

urlForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const url = urlInput.value.trim();
  if (url !== "") void open(urlSource(url));
});

for (const name of ["dragenter", "dragover"] as const) {
  document.addEventListener(name, (event) => {
    event.preventDefault();
    dropZone.classList.add("over");
  });
}
document.addEventListener("dragleave", () => dropZone.classList.remove("over"));
document.addEventListener("drop", (event) => {
  event.preventDefault();
  dropZone.classList.remove("over");
  const file = event.dataTransfer?.files[0];
  if (file !== undefined) void open(blobSource(file, file.name));
});

deepButton.addEventListener("click", () => void deepCheck());
