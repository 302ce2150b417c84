// @kiln/core/testing, deprecated: the conformance kit is the package @kiln/testing (npm i -D @kiln/testing).
// This subpath re-exports it, found next to @kiln/core or in the current project, for one minor
// version (kiln 0.2.x), with a one-time DeprecationWarning; without it, a MissingDependencyError.
// Hand-written (not built by tsup): @kiln/core has no dependency on @kiln/testing, at build time or any other.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MissingDependencyError } from '@kiln/core';

const WARNED = Symbol.for('kiln.core-testing-deprecation-warned');

function isMissingTesting(error) {
  return (
    (error?.code === 'ERR_MODULE_NOT_FOUND' || error?.code === 'MODULE_NOT_FOUND') &&
    String(error.message).includes('@kiln/testing')
  );
}

async function loadTesting() {
  try {
    return await import('@kiln/testing');
  } catch (error) {
    if (!isMissingTesting(error)) throw error;
    try {
      // Not next to @kiln/core (an isolated install such as pnpm's): the current project's own.
      // Its ES module entry (require.resolve would give the CommonJS one: a second copy of the kit).
      const manifestPath = createRequire(join(process.cwd(), 'package.json')).resolve('@kiln/testing/package.json');
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
      return await import(pathToFileURL(join(dirname(manifestPath), manifest.exports['.'].import.default)).href);
    } catch (fallbackError) {
      if (!isMissingTesting(fallbackError)) throw fallbackError;
    }
    throw new MissingDependencyError(
      '@kiln/testing',
      '@kiln/core/testing re-exports the conformance kit from @kiln/testing, which is not installed',
      {
        hint: 'install @kiln/testing (npm i -D @kiln/testing) and import from it instead of @kiln/core/testing',
        cause: error,
      },
    );
  }
}

const testing = await loadTesting();
if (globalThis[WARNED] !== true) {
  globalThis[WARNED] = true;
  process.emitWarning(
    '@kiln/core/testing is deprecated and goes away in kiln 0.3: import the conformance kit from @kiln/testing (npm i -D @kiln/testing)',
    {
      type: 'DeprecationWarning',
      code: 'KILN_CORE_TESTING',
    },
  );
}

export const {
  ConformanceSkipSignal,
  DEFAULT_CONFORMANCE_SEED,
  DEFAULT_GRADCHECK_TOLERANCE,
  DEFAULT_TOLERANCES,
  EXACT_TOLERANCE,
  KERNEL_DTYPES,
  KilnConformanceError,
  buildConformanceCases,
  createReferenceBackend,
  describeBackendConformance,
  formatSupportMatrix,
  gradcheck,
  relativeL2Error,
  runConformance,
  supportMatrix,
  withinTolerance,
} = testing;
