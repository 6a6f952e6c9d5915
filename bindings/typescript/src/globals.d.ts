// The host APIs the binding uses beyond ES2022: WHATWG TextDecoder, URL and
// DecompressionStream, and timers (globals in Node and browsers). Declared here so that the build needs neither @types/node nor lib "dom".
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: Uint8Array): string;
}
declare class URL {
  constructor(url: string, base?: string);
  toString(): string;
}
/** Only inspectPackage uses it, and only where the host has it (typeof check). */
declare class DecompressionStream {
  constructor(format: "deflate-raw");
  readonly writable: {
    getWriter(): {
      readonly ready: Promise<void>;
      write(chunk: Uint8Array<ArrayBuffer>): Promise<void>;
      close(): Promise<void>;
      abort(reason?: unknown): Promise<void>;
    };
  };
  readonly readable: {
    getReader(): {
      read(): Promise<{ done: boolean; value?: Uint8Array }>;
      cancel(): Promise<void>;
    };
  };
}
/** urlSource's per-request timeout. */
declare function setTimeout(callback: () => void, ms: number): unknown;
declare function clearTimeout(handle: unknown): void;
