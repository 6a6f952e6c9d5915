// The few Node APIs the Node-only entry (node.ts) uses, declared here so that the build
// needs no @types/node and the browser entry never sees them.
declare module "node:fs/promises" {
  interface FileHandle {
    stat(): Promise<{ size: number; isFile(): boolean }>;
    read(
      buffer: Uint8Array,
      offset: number,
      length: number,
      position: number,
    ): Promise<{ bytesRead: number }>;
    close(): Promise<void>;
  }
  function open(path: string, flags: string): Promise<FileHandle>;
}
declare module "node:zlib" {
  /** Node >= 20.15 (and 22.2); undefined before. */
  const crc32: ((data: Uint8Array, value?: number) => number) | undefined;
}
declare module "node:crypto" {
  interface Hash {
    update(data: Uint8Array): Hash;
    digest(encoding: "hex"): string;
  }
  function createHash(algorithm: string): Hash;
}
