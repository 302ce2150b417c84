// @kiln/core/testing, deprecated (CommonJS): see index.js. Re-exports @kiln/testing, found next to
// @kiln/core or in the current project, with a one-time DeprecationWarning; without it, a MissingDependencyError.
'use strict';
const { createRequire } = require('node:module');
const { join } = require('node:path');
const { MissingDependencyError } = require('@kiln/core');

const WARNED = Symbol.for('kiln.core-testing-deprecation-warned');

function isMissingTesting(error) {
  return error?.code === 'MODULE_NOT_FOUND' && String(error.message).includes('@kiln/testing');
}

function loadTesting() {
  try {
    return require('@kiln/testing');
  } catch (error) {
    if (!isMissingTesting(error)) throw error;
    try {
      // Not next to @kiln/core (an isolated install such as pnpm's): the current project's own.
      return createRequire(join(process.cwd(), 'package.json'))('@kiln/testing');
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

module.exports = loadTesting();
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
