// SHA-256 (FIPS 180-4), portable: the digest of a package's bytes, for a caller that checks
// it against the one a signature names (spec.md section 12; ptn verifies signatures in
// Python, with model-signing). Node's own hash is several times faster: pass nodeSha256
// (from "@ptn/metadata/node") as the `hasher` option.

import type { ByteSource } from "./byte_source.js";

/** What packageSha256 feeds: update with each piece, then the digest in lowercase hex. */
export interface Hasher {
  update(bytes: Uint8Array): void;
  hexDigest(): string;
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** An incremental SHA-256 in plain TypeScript (browsers and Node alike). */
export class Sha256 implements Hasher {
  private readonly h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  private readonly w = new Uint32Array(64);
  private readonly block = new Uint8Array(64);
  private buffered = 0;
  private length = 0;

  update(bytes: Uint8Array): void {
    let at = 0;
    this.length += bytes.length;
    if (this.buffered > 0) {
      const take = Math.min(bytes.length, 64 - this.buffered);
      this.block.set(bytes.subarray(0, take), this.buffered);
      this.buffered += take;
      at = take;
      if (this.buffered < 64) return;
      this.compress(this.block, 0);
      this.buffered = 0;
    }
    for (; at + 64 <= bytes.length; at += 64) this.compress(bytes, at);
    this.block.set(bytes.subarray(at), 0);
    this.buffered = bytes.length - at;
  }

  hexDigest(): string {
    const bits = this.length * 8;
    const tail = new Uint8Array(((this.buffered < 56 ? 56 : 120) - this.buffered) + 8);
    tail[0] = 0x80;
    // The bit count as 64 big-endian bits (lengths up to 2^53 bytes).
    const high = Math.floor(bits / 2 ** 32);
    const view = new DataView(tail.buffer);
    view.setUint32(tail.length - 8, high >>> 0);
    view.setUint32(tail.length - 4, bits >>> 0);
    const length = this.length;
    this.update(tail);
    this.length = length;
    let out = "";
    for (const word of this.h) out += word.toString(16).padStart(8, "0");
    return out;
  }

  private compress(p: Uint8Array, at: number): void {
    const w = this.w;
    for (let i = 0; i < 16; i++) {
      const j = at + 4 * i;
      w[i] = ((p[j]! << 24) | (p[j + 1]! << 16) | (p[j + 2]! << 8) | p[j + 3]!) >>> 0;
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
    }
    const h = this.h;
    let a = h[0]!, b = h[1]!, c = h[2]!, d = h[3]!, e = h[4]!, f = h[5]!, g = h[6]!, hh = h[7]!;
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + s1 + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] = (h[0]! + a) >>> 0;
    h[1] = (h[1]! + b) >>> 0;
    h[2] = (h[2]! + c) >>> 0;
    h[3] = (h[3]! + d) >>> 0;
    h[4] = (h[4]! + e) >>> 0;
    h[5] = (h[5]! + f) >>> 0;
    h[6] = (h[6]! + g) >>> 0;
    h[7] = (h[7]! + hh) >>> 0;
  }
}

/** The SHA-256 of `bytes`, lowercase hex. */
export function sha256Hex(bytes: Uint8Array): string {
  const hasher = new Sha256();
  hasher.update(bytes);
  return hasher.hexDigest();
}

export interface Sha256Options {
  /** A hasher to use instead of the portable one (Node: nodeSha256 from "@ptn/metadata/node"). */
  hasher?: () => Hasher;
  /** Bytes read at a time (default 4 MiB): memory stays at one piece whatever the size. */
  chunkSize?: number;
}

/**
 * The SHA-256 of a whole package (every byte of the file, as a signature names it), read
 * from `source` a piece at a time: what `ptn inspect --json` shows as signature.sha256 for
 * a package its signature matches.
 */
export async function packageSha256(source: ByteSource, options: Sha256Options = {}): Promise<string> {
  const hasher = options.hasher ? options.hasher() : new Sha256();
  const chunk = options.chunkSize ?? 4 << 20;
  const size = await source.size();
  for (let offset = 0; offset < size; offset += chunk) {
    hasher.update(await source.read(offset, Math.min(chunk, size - offset)));
  }
  return hasher.hexDigest();
}
