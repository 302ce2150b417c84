/**
 * Every tarball kiln would publish (and the backend template a plugin author copies), as npm
 * users get it: publint --strict and are-the-types-wrong report nothing (CJS and ESM; node10,
 * node16 and bundler resolution), the metadata npm shows is complete, there is a LICENSE and no
 * source map of a file that is not shipped, and every README link works on npmjs.com.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { checkPackage, createPackageFromTarballData, type Package } from '@arethetypeswrong/core';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { describe, expect, inject, it } from 'vitest';
import { publishedPackages, REPOSITORY, TEMPLATE_NAME, workspacePackages } from './setup/workspace.js';

const packed = inject('packed');
const published = publishedPackages();
const template = workspacePackages().find((item) => item.name === TEMPLATE_NAME);
const linted = [...published, ...(template === undefined ? [] : [template])];

interface Tarball {
  bytes: Uint8Array;
  contents: Package;
  /** Paths inside the package, e.g. 'dist/index.js'. */
  files: string[];
  manifest: Record<string, unknown>;
}

const cache = new Map<string, Tarball>();

function tarballOf(name: string): Tarball {
  const path = packed.tarballs[name];
  const cached = cache.get(path);
  if (cached !== undefined) return cached;
  const bytes = new Uint8Array(readFileSync(path));
  const contents = createPackageFromTarballData(bytes);
  const prefix = `/node_modules/${name}/`;
  const files = contents.listFiles().map((file) => file.slice(prefix.length));
  const manifest = JSON.parse(contents.readFile(`${prefix}package.json`)) as Record<string, unknown>;
  const tarball = { bytes, contents, files, manifest };
  cache.set(path, tarball);
  return tarball;
}

describe.each(linted.map((item) => ({ name: item.name, item })))('$name', ({ name, item }) => {
  const reason = packed.notPacked[name];
  const runIt = reason === undefined ? it : it.skip;
  const suffix = reason === undefined ? '' : ` (skipped: ${reason})`;

  runIt(`publint --strict reports nothing${suffix}`, async () => {
    const { bytes } = tarballOf(name);
    const result = await publint({ pack: { tarball: bytes.slice().buffer }, strict: true, level: 'suggestion' });
    expect(
      result.messages.map((message) => `${message.type}: ${formatMessage(message, result.pkg) ?? message.code}`),
    ).toEqual([]);
  });

  runIt(`are-the-types-wrong reports no problem (node10, node16 CJS and ESM, bundler)${suffix}`, async () => {
    const { contents, files } = tarballOf(name);
    const result = await checkPackage(contents);
    if (!files.some((file) => file.endsWith('.d.ts') || file.endsWith('.d.cts'))) {
      // A binary-only platform package has no JavaScript entry point and no types to check.
      expect(
        files.some((file) => file.endsWith('.node')),
        `${name} ships neither types nor a native binary`,
      ).toBe(true);
      return;
    }
    expect(result.types, `${name} ships no types`).not.toBe(false);
    if (result.types === false) return;
    const problems = result.problems.map(
      (problem) =>
        `${problem.kind}${'entrypoint' in problem ? ` at ${problem.entrypoint}` : ''}${'resolutionKind' in problem ? ` (${problem.resolutionKind})` : ''}`,
    );
    expect(problems).toEqual([]);
    // Both module systems get their own declaration files.
    if (item.manifest.private !== true && typeof result.entrypoints === 'object') {
      for (const [entrypoint, info] of Object.entries(result.entrypoints).filter(
        ([subpath]) => subpath !== './package.json',
      )) {
        const resolutions = info.resolutions;
        expect(resolutions['node16-cjs']?.resolution?.fileName, `${name} ${entrypoint} under node16 from CJS`).toMatch(
          /\.d\.cts$/,
        );
        expect(resolutions['node16-esm']?.resolution?.fileName, `${name} ${entrypoint} under node16 from ESM`).toMatch(
          /\.d\.ts$/,
        );
      }
    }
  });

  runIt(`has a LICENSE, its README, complete metadata and no orphan source maps${suffix}`, () => {
    const { files, manifest } = tarballOf(name);
    expect(files).toContain('LICENSE');
    expect(files).toContain('README.md');
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
    expect(typeof manifest.description === 'string' && manifest.description.length > 20, 'description').toBe(true);
    expect(manifest.license).toBe('MIT');
    expect((manifest.engines as Record<string, string> | undefined)?.node, 'engines.node').toMatch(/>=\s*20/);
    if (item.manifest.private === true) return;
    expect(typeof manifest.sideEffects === 'boolean' || Array.isArray(manifest.sideEffects), 'sideEffects').toBe(true);
    const keywords = manifest.keywords as string[] | undefined;
    expect(keywords, 'keywords').toContain('kiln');
    // Backends (not their per-platform binary packages) are findable on npm by the kiln-backend keyword.
    if (/^@kiln\/backend-[a-z]+$/.test(name) || name.includes('kiln-backend-'))
      expect(keywords).toContain('kiln-backend');
    const repository = manifest.repository as { type?: string; url?: string; directory?: string } | undefined;
    expect(repository?.type).toBe('git');
    expect(repository?.url).toMatch(/^git\+https:\/\/github\.com\/[\w-]+\/[\w-]+\.git$/);
    expect(repository?.directory).toBe(relative(REPOSITORY, item.directory).replace(/\\/g, '/'));
    expect(manifest.homepage).toMatch(/^https:\/\/github\.com\//);
    expect((manifest.bugs as { url?: string } | undefined)?.url).toMatch(/^https:\/\/github\.com\/.*\/issues$/);
  });

  runIt(`README links work on npmjs.com (absolute, or anchors)${suffix}`, () => {
    const { contents } = tarballOf(name);
    const readme = contents.readFile(`/node_modules/${name}/README.md`);
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]);
    expect(links.filter((link) => !/^(https?:\/\/|#|mailto:)/.test(link))).toEqual([]);
  });
});

describe('what is packed', () => {
  it('packs every published package (the CUDA binary package only with a CUDA build)', () => {
    for (const item of published)
      expect(packed.tarballs[item.name] ?? packed.notPacked[item.name], item.name).toBeDefined();
    const unpackable = Object.keys(packed.notPacked);
    expect(unpackable.every((name) => /-(linux|darwin|win32)-(x64|arm64)$/.test(name))).toBe(true);
  });

  it('ships the core package without the 1.6 MB of source maps it used to carry', () => {
    const { bytes, files } = tarballOf('@kiln/core');
    // The conformance kit is @kiln/testing now: core ships only the deprecated re-export.
    expect(files.filter((file) => file.startsWith('testing-shim/')).sort()).toEqual([
      'testing-shim/index.cjs',
      'testing-shim/index.d.cts',
      'testing-shim/index.d.ts',
      'testing-shim/index.js',
    ]);
    expect(files.some((file) => file.startsWith('dist/testing/'))).toBe(false);
    expect(bytes.byteLength).toBeLessThan(600_000);
  });

  it('ships the conformance kit as @kiln/testing, with vitest an optional peer and @kiln/core a peer', () => {
    const { files } = tarballOf('@kiln/testing');
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.cjs',
        'dist/index.d.ts',
        'dist/index.d.cts',
        'LICENSE',
        'README.md',
      ]),
    );
    const manifest = JSON.parse(readFileSync(join(REPOSITORY, 'packages', 'testing', 'package.json'), 'utf8')) as {
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
      peerDependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(['@kiln/core', 'vitest']);
    expect(manifest.peerDependenciesMeta).toEqual({ vitest: { optional: true } });
    const core = JSON.parse(readFileSync(join(REPOSITORY, 'packages', 'core', 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect([core.dependencies, core.peerDependencies, core.optionalDependencies]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
});
