/** describeBackendConformance without vitest: a typed error that says what to install (vitest loaded through an injected importer). */
import { describe, expect, it } from 'vitest';
import * as vitest from 'vitest';
import { KilnError, MissingDependencyError } from '@kiln/core';
import { loadVitest, requireVitest } from '../src/conformance/vitest-access.js';

function notFound(): Promise<never> {
  return Promise.reject(
    Object.assign(
      new Error("Cannot find package 'vitest' imported from /project/node_modules/@kiln/testing/dist/index.js"),
      { code: 'ERR_MODULE_NOT_FOUND' },
    ),
  );
}

describe('vitest as an optional peer', () => {
  it('throws MissingDependencyError naming vitest and the install command when vitest is not installed', async () => {
    const load = await loadVitest(notFound);
    let thrown: unknown;
    try {
      requireVitest(load);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MissingDependencyError);
    expect(KilnError.isInstance(thrown)).toBe(true);
    const error = thrown as MissingDependencyError;
    expect(error.code).toBe('MISSING_DEPENDENCY');
    expect(error.packageName).toBe('vitest');
    expect(error.message).toBe(
      'describeBackendConformance needs vitest, which is not installed\n' +
        '  hint: install vitest (npm i -D vitest) and run the test file with it, or call runConformance(backend) for a report without vitest',
    );
    expect((error.cause as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('names the failure when vitest is installed but does not load', async () => {
    const load = await loadVitest(() => Promise.reject(new Error('Vitest failed to start\nstack…')));
    expect(() => requireVitest(load)).toThrow(
      /^describeBackendConformance could not load vitest \(Vitest failed to start\)\n {2}hint: install vitest \(npm i -D vitest\)/,
    );
  });

  it('hands back vitest when it loads', async () => {
    const load = await loadVitest(() => Promise.resolve(vitest));
    expect(requireVitest(load).describe).toBe(vitest.describe);
  });
});
