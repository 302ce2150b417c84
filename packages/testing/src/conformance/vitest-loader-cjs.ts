/**
 * The CommonJS build's vitest-loader.ts: vitest is an ES module only package that cannot be
 * required, so under `require('@kiln/testing')` describeBackendConformance reports that.
 */
import type { VitestLoad } from './vitest-access.js';

/** vitest is never loaded from CommonJS. */
export const VITEST: VitestLoad = {
  failure: new Error(
    'vitest cannot be loaded from CommonJS (require): import @kiln/testing from an ES module, as vitest test files are',
  ),
};
