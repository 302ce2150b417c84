/**
 * @kiln/core/testing, the deprecated subpath (packages/core/testing-shim): in a child process with a
 * project that links @kiln/core (built), it re-exports @kiln/testing with one DeprecationWarning, and
 * throws MissingDependencyError naming @kiln/testing when that is not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import * as kit from '../src/index.js';

const coreRoot = fileURLToPath(new URL('../../core', import.meta.url));
const project = mkdtempSync(join(tmpdir(), 'kiln-core-testing-shim-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'shim-check', private: true, type: 'module' }));
mkdirSync(join(project, 'node_modules', '@kiln'), { recursive: true });
symlinkSync(coreRoot, join(project, 'node_modules', '@kiln', 'core'), 'dir');
const names = Object.keys(kit).sort();

function node(script: string, type: 'module' | 'commonjs'): { stdout: string; stderr: string } {
  const file = join(project, type === 'module' ? 'check.mjs' : 'check.cjs');
  writeFileSync(file, script);
  // Without NODE_PATH: pnpm's scripts point it at the workspace's hoisted packages, which hold the real @kiln/testing.
  const { NODE_PATH: _nodePath, ...environment } = process.env;
  const result = spawnSync(process.execPath, [file], { cwd: project, encoding: 'utf8', env: environment });
  if (result.status !== 0) throw new Error(`node ${file} failed: ${result.stderr}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

const REPORT =
  '(error) => JSON.stringify({ name: error.name, code: error.code, packageName: error.packageName, message: error.message })';

describe('@kiln/core/testing (deprecated)', () => {
  it('throws MissingDependencyError naming @kiln/testing when it is not installed (import and require)', () => {
    const expected = {
      name: 'MissingDependencyError',
      code: 'MISSING_DEPENDENCY',
      packageName: '@kiln/testing',
      message:
        '@kiln/core/testing re-exports the conformance kit from @kiln/testing, which is not installed\n' +
        '  hint: install @kiln/testing (npm i -D @kiln/testing) and import from it instead of @kiln/core/testing',
    };
    const esm = node(
      `await import('@kiln/core/testing').then(() => console.log('loaded'), ${REPORT}).then((line) => line && console.log(line));\n`,
      'module',
    );
    expect(JSON.parse(esm.stdout)).toEqual(expected);
    const cjs = node(
      `try { require('@kiln/core/testing'); console.log('loaded'); } catch (error) { console.log((${REPORT})(error)); }\n`,
      'commonjs',
    );
    expect(JSON.parse(cjs.stdout)).toEqual(expected);
  });

  it('re-exports every export of @kiln/testing from the project, warning once', () => {
    const fake = join(project, 'node_modules', '@kiln', 'testing');
    mkdirSync(fake, { recursive: true });
    writeFileSync(
      join(fake, 'package.json'),
      JSON.stringify({
        name: '@kiln/testing',
        version: '0.2.0',
        type: 'module',
        exports: {
          '.': { import: { default: './index.js' }, require: { default: './index.cjs' } },
          './package.json': './package.json',
        },
      }),
    );
    writeFileSync(join(fake, 'index.js'), names.map((name) => `export const ${name} = 'kit:${name}';\n`).join(''));
    writeFileSync(join(fake, 'index.cjs'), names.map((name) => `exports.${name} = 'kit:${name}';\n`).join(''));
    const esm = node(
      "const first = await import('@kiln/core/testing');\nawait import('@kiln/core/testing');\nconsole.log(JSON.stringify(Object.entries(first).sort()));\n",
      'module',
    );
    expect(JSON.parse(esm.stdout)).toEqual(names.map((name) => [name, `kit:${name}`]));
    expect(esm.stderr.match(/DeprecationWarning/g)).toHaveLength(1);
    expect(esm.stderr).toContain(
      '@kiln/core/testing is deprecated and goes away in kiln 0.3: import the conformance kit from @kiln/testing (npm i -D @kiln/testing)',
    );
    const cjs = node(
      "const kit = require('@kiln/core/testing');\nrequire('@kiln/core/testing');\nconsole.log(JSON.stringify(Object.entries(kit).sort()));\n",
      'commonjs',
    );
    expect(JSON.parse(cjs.stdout)).toEqual(names.map((name) => [name, `kit:${name}`]));
    expect(cjs.stderr.match(/DeprecationWarning/g)).toHaveLength(1);
  });
});
