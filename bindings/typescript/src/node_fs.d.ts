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
