// The host APIs the binding uses beyond ES2022: WHATWG TextDecoder and URL (globals in
// Node and browsers). Declared here so that the build needs neither @types/node nor lib "dom".
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: Uint8Array): string;
}
declare class URL {
  constructor(url: string, base?: string);
  toString(): string;
}
