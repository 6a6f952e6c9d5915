// A package's metadata.json without the rest (Python's ptn.read_metadata, Java's
// Packages.readMetadata): the zip directory is read and checked, then that member's bytes
// only, through a ByteSource (a file, a Blob, a URL: a few KiB whatever the package's size).
// PackageMetadata gives the typed reads of a package (spec 9.5) by name, as ptn.Package and
// ptn::Package do. The generated package.ts binds both to the generated Metadata class.

import { bytesSource, type ByteSource } from "./byte_source.js";
import { METADATA_MEMBER, type IntRange, type MetadataBase } from "./metadata_core.js";
import { MAX_JSON_BYTES, PtnError, pointer } from "./strict_json.js";
import { readMembers, Reader } from "./zip_reader.js";

/** What a package is read from: any ByteSource (nodeFileSource, blobSource, urlSource), or
 * the bytes of the whole package. */
export type PackageInput = ByteSource | Uint8Array;

/**
 * @internal The bytes of the package's metadata.json, or null when it has none. The
 * container is checked first: its first error is thrown (a PtnError, as Python's
 * read_metadata raises it), and so is a source that cannot be read (ptn-io-error).
 */
export async function metadataBytes(input: PackageInput): Promise<Uint8Array | null> {
  const src = input instanceof Uint8Array ? bytesSource(input, "package") : input;
  const r = new Reader(src, await src.size());
  const { members, findings } = await readMembers(r);
  const error = findings.find((f) => f.severity === "error");
  if (error !== undefined) {
    throw new PtnError(error.rule, error.message, { member: error.member, pointer: error.pointer });
  }
  const member = members.find((m) => m.name === METADATA_MEMBER);
  if (member === undefined) return null;
  if (member.size > MAX_JSON_BYTES) {
    throw new PtnError("json-too-large", `document of ${member.size} bytes exceeds ${MAX_JSON_BYTES}`, {
      member: METADATA_MEMBER,
    });
  }
  return r.bytes(member.dataOffset, member.size);
}

/**
 * The typed reads of one package's metadata (spec 9.5), as `pkg.metadata_int(name)` in
 * Python and C++: each throws the PtnError of the read (metadata-missing-name,
 * metadata-wrong-kind, metadata-read-out-of-range), and metadata-missing-name for every
 * name when the package has no metadata.json. `metadata` is the parsed document (null
 * without one), with the well-known accessors (`maxContextLen()`, `windows()`, ...).
 */
export class PackageMetadata<M extends MetadataBase = MetadataBase> {
  constructor(readonly metadata: M | null) {}

  /** An integer (never a float or a bool); optional bounds for the caller's own range. */
  metadataInt(name: string, range?: IntRange): bigint {
    return this.#read(name).metadataInt(name, range);
  }

  /** A list of integers (or `[]`). */
  metadataInts(name: string, range?: IntRange): bigint[] {
    return this.#read(name).metadataInts(name, range);
  }

  /** A float; an integer is accepted and converted. */
  metadataFloat(name: string): number {
    return this.#read(name).metadataFloat(name);
  }

  /** A list of numbers (a float list, an integer list or `[]`). */
  metadataFloats(name: string): number[] {
    return this.#read(name).metadataFloats(name);
  }

  metadataStr(name: string): string {
    return this.#read(name).metadataStr(name);
  }

  metadataStrs(name: string): string[] {
    return this.#read(name).metadataStrs(name);
  }

  metadataBool(name: string): boolean {
    return this.#read(name).metadataBool(name);
  }

  metadataBools(name: string): boolean[] {
    return this.#read(name).metadataBools(name);
  }

  #read(name: string): M {
    if (this.metadata === null) {
      throw new PtnError("metadata-missing-name", `no metadata named ${JSON.stringify(name)} (the package has no metadata.json)`, {
        member: METADATA_MEMBER,
        pointer: pointer(name),
      });
    }
    return this.metadata;
  }
}
