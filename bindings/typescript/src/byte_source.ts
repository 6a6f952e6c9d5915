// Byte sources: what the package validator reads through (N bytes at an offset).
//
// A .ptn can be gigabytes; the fast check needs only its headers, so nothing here ever
// reads a whole file: a Blob is sliced, a URL is read with HTTP Range requests, and a
// server that ignores Range is refused (its body is aborted, not downloaded).

import { PtnError } from "./strict_json.js";

/** Random access to the bytes of one file. Every failure is a PtnError (ptn-io-error). */
export interface ByteSource {
  /** How reports name the file (a path, a file name, a URL). */
  readonly name: string;
  /** The file's length in bytes. */
  size(): Promise<number>;
  /** Exactly `length` bytes from `offset` (the caller keeps the range inside size()). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** The part of a WHATWG Blob (or File) that blobSource uses. */
export interface BlobLike {
  readonly size: number;
  readonly name?: string;
  slice(start: number, end: number): { arrayBuffer(): Promise<ArrayBuffer> };
}

/** The part of a WHATWG fetch Response that urlSource uses. */
export interface FetchResponseLike {
  readonly status: number;
  readonly type?: string;
  readonly headers: { get(name: string): string | null };
  readonly body: {
    getReader(): {
      read(): Promise<{ done: boolean; value?: Uint8Array }>;
      cancel(reason?: unknown): Promise<void>;
    };
    cancel?(reason?: unknown): Promise<void>;
  } | null;
}

/** The part of WHATWG fetch that urlSource uses (globalThis.fetch fits it). */
export type FetchLike = (
  url: string,
  init: { headers: Record<string, string>; redirect: "manual" | "follow"; signal?: unknown },
) => Promise<FetchResponseLike>;

function ioError(message: string): PtnError {
  return new PtnError("ptn-io-error", message);
}

/** @internal ptn-io-error unless [offset, offset + length) lies inside a file of `size` bytes. */
export function checkRange(name: string, offset: number, length: number, size: number): void {
  if (
    !Number.isSafeInteger(offset) ||
    !Number.isSafeInteger(length) ||
    offset < 0 ||
    length < 0 ||
    offset + length > size
  ) {
    throw ioError(`${name}: cannot read ${length} bytes at offset ${offset} of ${size}`);
  }
}

/** A Blob or File (browser, Node >= 20): each read is one slice, never the whole Blob. */
export function blobSource(blob: BlobLike, name?: string): ByteSource {
  const label = name ?? blob.name ?? "blob";
  return {
    name: label,
    size: () => Promise.resolve(blob.size),
    async read(offset: number, length: number): Promise<Uint8Array> {
      checkRange(label, offset, length, blob.size);
      let buffer: ArrayBuffer;
      try {
        buffer = await blob.slice(offset, offset + length).arrayBuffer();
      } catch (err) {
        throw ioError(`${label}: cannot read ${length} bytes at offset ${offset}: ${String(err)}`);
      }
      if (buffer.byteLength !== length) {
        throw ioError(`${label}: read ${buffer.byteLength} of ${length} bytes at offset ${offset}`);
      }
      return new Uint8Array(buffer);
    },
  };
}

/** An in-memory file (tests, or bytes already at hand). */
export function bytesSource(bytes: Uint8Array, name = "bytes"): ByteSource {
  return {
    name,
    size: () => Promise.resolve(bytes.length),
    read(offset: number, length: number): Promise<Uint8Array> {
      checkRange(name, offset, length, bytes.length);
      return Promise.resolve(bytes.subarray(offset, offset + length));
    },
  };
}

export interface UrlSourceOptions {
  /** The fetch to use (default globalThis.fetch). */
  fetch?: FetchLike;
  /** Redirects followed per request (default 5); more is ptn-io-error. */
  maxRedirects?: number;
  /** Milliseconds a request may wait for its answer's headers, then for each next piece
   * of its body (default 30,000): a silent server, or one dripping header bytes, is
   * ptn-io-error then, never a wait without end. A body dripping just faster is the
   * caller's `signal` to bound. */
  timeoutMs?: number;
  /** Stops every request when it aborts (a caller's deadline: AbortSignal.timeout(ms));
   * a read it stops is ptn-timeout. */
  signal?: AbortSignalLike;
}

/** The part of an AbortSignal that urlSource uses. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/** One request's timer and the caller's signal (see urlSource's watch). */
interface Watch {
  /** The error to report once aborted (ptn-io-error: timeout; ptn-timeout: the caller). */
  why(): PtnError | undefined;
  /** `work`, or the abort's error if that comes first. */
  race<T>(work: Promise<T>): Promise<T>;
  /** Bytes arrived: the timeout starts again. */
  progress(): void;
  clear(): void;
}

/** The first request asks for this many bytes from the start (the first local headers
 * come with the size). A prefix, not a suffix: a browser sends a cross-origin request
 * for `bytes=N-M` without a CORS preflight, but not one for `bytes=-N`. */
const HEAD_BYTES = 4096;

interface AbortControllerLike {
  readonly signal: unknown;
  abort(reason?: unknown): void;
}

function abortController(): AbortControllerLike | undefined {
  const ctor = (globalThis as { AbortController?: new () => AbortControllerLike }).AbortController;
  return ctor === undefined ? undefined : new ctor();
}

/**
 * A file on an HTTP(S) server that supports Range requests: each read is one request for
 * exactly the bytes asked for. A response that is not 206 with the range asked for (a server
 * ignoring Range answers 200 with the whole file) is a ptn-io-error, and its body is
 * aborted unread.
 */
export function urlSource(url: string, opts: UrlSourceOptions = {}): ByteSource {
  const fetchFn =
    opts.fetch ?? (globalThis as { fetch?: FetchLike }).fetch ?? missingFetch;
  const maxRedirects = opts.maxRedirects ?? 5;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let resolved = url; // where redirects led the first time
  let total: number | undefined;
  let head: Uint8Array | undefined;

  async function request(first: number, last: number): Promise<{ size: number; bytes: Uint8Array }> {
    const range = `bytes=${first}-${last}`;
    let target = resolved;
    for (let hop = 0; ; hop++) {
      // One controller per request: its timer and the caller's signal abort the fetch, the
      // wait for headers and every read of the body alike.
      const controller = abortController();
      const stop = watch(controller);
      try {
        let response: FetchResponseLike;
        try {
          response = await stop.race(
            fetchFn(target, {
              headers: { Range: range, "Accept-Encoding": "identity" },
              redirect: "manual",
              signal: controller?.signal,
            }),
          );
        } catch (err) {
          throw stop.why() ?? ioError(`${url}: request failed: ${String(err)}`);
        }
        stop.progress(); // the headers came
        const location = response.headers.get("location");
        if (response.status >= 300 && response.status < 400 && location !== null) {
          await discard(response, controller);
          if (hop >= maxRedirects) throw ioError(`${url}: more than ${maxRedirects} redirects`);
          target = new URL(location, target).toString();
          continue;
        }
        if (response.type === "opaqueredirect") {
          // A browser hides redirect targets from "manual": let it follow them itself.
          await discard(response, controller);
          try {
            response = await stop.race(
              fetchFn(target, { headers: { Range: range }, redirect: "follow", signal: controller?.signal }),
            );
          } catch (err) {
            throw stop.why() ?? ioError(`${url}: request failed: ${String(err)}`);
          }
        }
        resolved = target;
        return await rangeBody(response, controller, first, last, stop);
      } finally {
        stop.clear();
      }
    }
  }

  /** Abort `controller` after timeoutMs, or when the caller's signal aborts; why() then
   * gives the error to report (ptn-io-error for the timeout, ptn-timeout for the caller). */
  function watch(controller: AbortControllerLike | undefined): Watch {
    let why: PtnError | undefined;
    let fail: (error: PtnError) => void = () => undefined;
    // Settles only by rejecting, when aborted: raced with every wait, so a fetch that
    // ignores its signal cannot hold the read either.
    const aborted = new Promise<never>((_, reject) => {
      fail = reject;
    });
    aborted.catch(() => undefined);
    const abort = (error: PtnError) => {
      why ??= error;
      fail(why);
      controller?.abort(error);
    };
    const stall = () => abort(ioError(`${url}: the server sent nothing for ${timeoutMs} ms`));
    let timer = setTimeout(stall, timeoutMs);
    const onSignal = () =>
      abort(new PtnError("ptn-timeout", `${url}: stopped (${String(opts.signal?.reason ?? "aborted")})`));
    if (opts.signal?.aborted) onSignal();
    opts.signal?.addEventListener("abort", onSignal, { once: true });
    return {
      why: () => why,
      race: <T>(work: Promise<T>) => Promise.race([work, aborted]),
      progress() {
        if (why !== undefined) return;
        clearTimeout(timer);
        timer = setTimeout(stall, timeoutMs);
      },
      clear() {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onSignal);
      },
    };
  }

  async function rangeBody(
    response: FetchResponseLike,
    controller: AbortControllerLike | undefined,
    first: number,
    last: number,
    stop: Watch,
  ): Promise<{ size: number; bytes: Uint8Array }> {
    const contentRange = response.headers.get("content-range") ?? "";
    if (response.status === 416) {
      await discard(response, controller);
      // An empty file has no byte 0: "bytes */0".
      const m = /^bytes \*\/(\d+)$/.exec(contentRange.trim());
      if (m && first === 0 && Number(m[1]) === 0) return { size: 0, bytes: new Uint8Array(0) };
      throw ioError(`${url}: the server refused the range (HTTP 416)`);
    }
    if (response.status !== 206) {
      await discard(response, controller);
      throw ioError(
        response.status === 200
          ? `${url}: the server ignores HTTP Range requests (it answered 200 with the whole file); ` +
              "validating a URL needs Range support"
          : `${url}: HTTP ${response.status}`,
      );
    }
    const encoding = (response.headers.get("content-encoding") ?? "identity").trim().toLowerCase();
    if (encoding !== "identity") {
      // A fetch decodes it on the fly: the bytes would not be the file's (and a body that
      // is not really gzip left the read pending for good).
      await discard(response, controller);
      throw ioError(`${url}: the server encoded the range (Content-Encoding: ${encoding}); ptn reads files as they are`);
    }
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(contentRange.trim());
    const start = m ? Number(m[1]) : NaN;
    const end = m ? Number(m[2]) : NaN;
    const size = m ? Number(m[3]) : NaN;
    if (
      !m ||
      !Number.isSafeInteger(size) ||
      start !== first ||
      end !== Math.min(last, size - 1) ||
      (total !== undefined && size !== total)
    ) {
      await discard(response, controller);
      throw ioError(`${url}: the server answered the range bytes=${first}-${last} with "${contentRange}"`);
    }
    const bytes = await readExactly(response, controller, end - start + 1, stop);
    return { size, bytes };
  }

  async function readExactly(
    response: FetchResponseLike,
    controller: AbortControllerLike | undefined,
    length: number,
    stop: Watch,
  ): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    let filled = 0;
    if (response.body !== null) {
      const reader = response.body.getReader();
      try {
        while (filled < length) {
          const { done, value } = await stop.race(reader.read());
          stop.progress();
          if (done || value === undefined) break;
          if (filled + value.length > length) {
            controller?.abort();
            await reader.cancel().catch(() => undefined);
            throw ioError(`${url}: the server sent more than the ${length} bytes asked for`);
          }
          out.set(value, filled);
          filled += value.length;
        }
      } catch (err) {
        if (err instanceof PtnError) throw err;
        throw stop.why() ?? ioError(`${url}: reading the response failed: ${String(err)}`);
      }
      await reader.cancel().catch(() => undefined);
    }
    if (filled !== length) throw ioError(`${url}: the server sent ${filled} of ${length} bytes`);
    return out;
  }

  return {
    name: url,
    async size(): Promise<number> {
      if (total === undefined) {
        const got = await request(0, HEAD_BYTES - 1);
        total = got.size;
        head = got.bytes;
      }
      return total;
    },
    async read(offset: number, length: number): Promise<Uint8Array> {
      const size = await this.size();
      checkRange(url, offset, length, size);
      if (length === 0) return new Uint8Array(0);
      if (head !== undefined && offset + length <= head.length) return head.subarray(offset, offset + length);
      return (await request(offset, offset + length - 1)).bytes;
    },
  };
}

async function discard(response: FetchResponseLike, controller: AbortControllerLike | undefined): Promise<void> {
  controller?.abort();
  try {
    await response.body?.cancel?.();
  } catch {
    // already aborted
  }
}

function missingFetch(): Promise<FetchResponseLike> {
  return Promise.reject(new Error("no fetch in this JavaScript environment; pass opts.fetch"));
}
