// The Node-only entry of the binding ("@ptn/metadata/node"): a local file as a ByteSource.
// A separate module so that a browser bundle of the main entry never imports node:fs.

import { createHash } from "node:crypto";
import { open, type FileHandle } from "node:fs/promises";
import * as zlib from "node:zlib";

import { checkRange, type ByteSource } from "./byte_source.js";
import type { Hasher } from "./sha256.js";
import { PtnError } from "./strict_json.js";
import { crc32 } from "./zip_reader.js";

/**
 * A local file, read with positioned reads (never whole). The file is opened on first use
 * and stays open until close(); an open or read failure is a PtnError (ptn-io-error).
 */
export interface NodeFileSource extends ByteSource {
  close(): Promise<void>;
}

export function nodeFileSource(path: string): NodeFileSource {
  let handle: Promise<{ file: FileHandle; size: number }> | undefined;

  function opened(): Promise<{ file: FileHandle; size: number }> {
    handle ??= (async () => {
      let file: FileHandle;
      try {
        file = await open(path, "r");
      } catch (err) {
        throw new PtnError("ptn-io-error", `cannot open ${path}: ${describe(err)}`);
      }
      try {
        const stat = await file.stat();
        if (!stat.isFile()) throw new Error("not a regular file");
        return { file, size: stat.size };
      } catch (err) {
        await file.close().catch(() => undefined);
        throw new PtnError("ptn-io-error", `cannot read ${path}: ${describe(err)}`);
      }
    })();
    return handle;
  }

  return {
    name: path,
    async size(): Promise<number> {
      return (await opened()).size;
    },
    async read(offset: number, length: number): Promise<Uint8Array> {
      const { file, size } = await opened();
      checkRange(path, offset, length, size);
      const out = new Uint8Array(length);
      let filled = 0;
      while (filled < length) {
        let bytesRead: number;
        try {
          ({ bytesRead } = await file.read(out, filled, length - filled, offset + filled));
        } catch (err) {
          throw new PtnError("ptn-io-error", `cannot read ${path}: ${describe(err)}`);
        }
        if (bytesRead === 0) {
          throw new PtnError("ptn-io-error", `${path} ended at ${offset + filled} bytes while being read (was it truncated?)`);
        }
        filled += bytesRead;
      }
      return out;
    },
    async close(): Promise<void> {
      const current = handle;
      handle = undefined;
      if (current !== undefined) await (await current.catch(() => undefined))?.file.close();
    },
  };
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * zlib's CRC-32 where Node has it (>= 20.15; several times the binding's portable one), else
 * the portable one: pass it as `crc32` in the validator's options.
 */
export const nodeCrc32: (data: Uint8Array, crc: number) => number = zlib.crc32 ?? crc32;

/** Node's SHA-256 (OpenSSL's): pass it as `hasher` to packageSha256. */
export function nodeSha256(): Hasher {
  const hash = createHash("sha256");
  return {
    update: (bytes: Uint8Array) => void hash.update(bytes),
    hexDigest: () => hash.digest("hex"),
  };
}
