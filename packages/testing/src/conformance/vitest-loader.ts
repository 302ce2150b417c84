/**
 * vitest, loaded once when the kit loads (the ES module build: top-level await), or why it could
 * not be. The CommonJS build replaces this module with vitest-loader-cjs.ts (tsup.config.ts).
 */
import { loadVitest, type VitestLoad } from './vitest-access.js';

/** The outcome of importing vitest. */
export const VITEST: VitestLoad = await loadVitest();
