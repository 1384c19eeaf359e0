import type * as CedarWasm from '@cedar-policy/cedar-wasm/nodejs';

/**
 * Cedar's official engine (Rust compiled to WebAssembly), loaded on first use: its 4 MB module is
 * compiled only by a gateway (or a configuration check) that has policies. Synchronous on purpose:
 * the configuration's validation, which reports policy errors with the rest, is synchronous.
 *
 * The bundle keeps the package outside its code (lib/bundling.ts copies it beside the bundle): the
 * package finds its `.wasm` file next to its own script, which a bundled copy could not.
 */
export type Cedar = typeof CedarWasm;

let loaded: Cedar | undefined;

export function cedar(): Cedar {
  // A require, not an import: the engine loads synchronously, and only when policies exist.
  loaded ??= require('@cedar-policy/cedar-wasm/nodejs') as Cedar;
  return loaded;
}
