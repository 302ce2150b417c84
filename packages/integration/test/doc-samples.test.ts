/**
 * Every code sample in docs/ and the README is run, so none can rot: TypeScript/JavaScript samples
 * are type-checked together (tsc, strict) and then executed as ES modules against the built
 * packages; JSON is parsed; YAML configs are loaded by the trainer's own loader; shell samples
 * have each `kiln` command and option checked against the CLI's definitions and each package or
 * binary they install or run checked against the workspace. `text` blocks are outputs and messages
 * (troubleshooting.md's are checked against the sources by troubleshooting-doc.test.ts).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createProgram, Terminal, type CliContext } from '@kiln/cli';
import { loadTrainConfig } from '@kiln/trainer';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { REPOSITORY, run, workspacePackages } from './setup/workspace.js';

interface Sample {
  /** e.g. 'docs/writing-a-backend.md #3'. */
  id: string;
  file: string;
  language: string;
  code: string;
  /** A repository file the sample shows verbatim (that file runs in its own package's tests). */
  copyOf?: string;
}

function samplesOf(file: string): Sample[] {
  const text = readFileSync(join(REPOSITORY, file), 'utf8');
  return [...text.matchAll(/(?:<!-- sample: (\S+) -->\n)?^```(\w*)\n([\s\S]*?)^```/gm)].map((match, index) => ({
    id: `${file} #${index + 1}`,
    file,
    language: match[2],
    code: match[3],
    ...(match[1] === undefined ? {} : { copyOf: match[1] }),
  }));
}

const DOCS = [
  'README.md',
  ...readdirSync(join(REPOSITORY, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const SAMPLES = DOCS.flatMap(samplesOf);
const CODE = SAMPLES.filter(
  (sample) => sample.copyOf === undefined && ['ts', 'js', 'typescript', 'javascript'].includes(sample.language),
);
const SAMPLE_DIRECTORY = join(REPOSITORY, 'packages', 'integration', '.doc-samples');
/** Pages a new user reads first: every sample there must say what it prints. */
const FIRST_CONTACT = ['README.md', 'docs/getting-started.md'];

/**
 * What a sample's console.log lines print, from their `// prints: …` comments (`…` matches
 * anything): one pattern per console.log, in order; undefined when the sample has no such comment.
 * A sample that has one must annotate every console.log.
 */
function printedComments(sample: Sample): RegExp[] | undefined {
  const lines = sample.code.split('\n').filter((line) => /console\.log\(/.test(line));
  const annotated = lines.map((line) => /\/\/ prints: (.+)$/.exec(line)?.[1]);
  if (annotated.every((text) => text === undefined)) return undefined;
  const missing = lines.filter((_line, index) => annotated[index] === undefined);
  if (missing.length > 0)
    throw new Error(`${sample.id}: console.log without a // prints: comment: ${missing.join(' | ')}`);
  const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return annotated.map((text) => new RegExp(`^${(text as string).trim().split('…').map(escape).join('[\\s\\S]*')}$`));
}

const fileOf = (sample: Sample) => join(SAMPLE_DIRECTORY, `${sample.id.replace(/[^\w]+/g, '-')}.ts`);

beforeAll(() => {
  rmSync(SAMPLE_DIRECTORY, { recursive: true, force: true });
  mkdirSync(SAMPLE_DIRECTORY, { recursive: true });
  // Each sample is its own ES module (top-level await, imports of the packages as a user writes them).
  for (const sample of CODE) writeFileSync(fileOf(sample), `${sample.code}\nexport {};\n`);
  writeFileSync(
    join(SAMPLE_DIRECTORY, 'tsconfig.json'),
    JSON.stringify({
      extends: '../../../tsconfig.base.json',
      compilerOptions: {
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [join(REPOSITORY, 'node_modules', '@types')],
      },
      include: ['*.ts'],
    }),
  );
});

afterAll(() => rmSync(SAMPLE_DIRECTORY, { recursive: true, force: true }));

describe('code samples in the docs', () => {
  it('has the samples this test is about (README "Using it", writing-a-backend, getting-started)', () => {
    expect(CODE.map((sample) => sample.file)).toEqual(
      expect.arrayContaining(['README.md', 'docs/writing-a-backend.md', 'docs/getting-started.md']),
    );
  });

  it('type-checks every TypeScript sample (strict, against the built packages)', async () => {
    const typescript = join(REPOSITORY, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [typescript, '-p', join(SAMPLE_DIRECTORY, 'tsconfig.json')], {
      cwd: SAMPLE_DIRECTORY,
    });
    expect(`${result.stdout}${result.stderr}`.trim()).toBe('');
  });

  it.each(CODE.map((sample) => [sample.id, sample] as const))(
    'runs %s and prints what its comments say',
    async (_id, sample) => {
      const printed: string[] = [];
      const log = vi
        .spyOn(console, 'log')
        .mockImplementation((...values: unknown[]) => void printed.push(format(...values)));
      try {
        await import(/* @vite-ignore */ pathToFileURL(fileOf(sample)).href);
      } finally {
        log.mockRestore();
      }
      const expected = printedComments(sample);
      if (expected === undefined) return;
      expect(printed.length, 'lines printed').toBe(expected.length);
      expected.forEach((pattern, index) => expect(printed[index], `console.log #${index + 1}`).toMatch(pattern));
    },
  );

  it.each(FIRST_CONTACT.map((file) => [file] as const))(
    '%s: every sample says what it prints (// prints: …)',
    (file) => {
      for (const sample of CODE.filter(
        (candidate) => candidate.file === file && /console\.log\(/.test(candidate.code),
      )) {
        expect(printedComments(sample), sample.id).toBeDefined();
      }
    },
  );

  it.each(SAMPLES.filter((sample) => sample.copyOf !== undefined).map((sample) => [sample.id, sample] as const))(
    'shows %s exactly as the file it copies',
    (_id, sample) => {
      expect(sample.code).toBe(readFileSync(join(REPOSITORY, sample.copyOf!), 'utf8'));
    },
  );

  it.each(SAMPLES.filter((sample) => sample.language === 'json').map((sample) => [sample.id, sample] as const))(
    'parses %s',
    (_id, sample) => {
      expect(() => JSON.parse(sample.code)).not.toThrow();
    },
  );

  it.each(SAMPLES.filter((sample) => sample.language === 'jsonl').map((sample) => [sample.id, sample] as const))(
    'parses every line of %s',
    (_id, sample) => {
      for (const line of sample.code.trim().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
    },
  );

  it.each(SAMPLES.filter((sample) => sample.language === 'yaml').map((sample) => [sample.id, sample] as const))(
    'loads %s as a training config',
    (_id, sample) => {
      expect(parseYaml(sample.code)).toBeTypeOf('object');
      expect(() => loadTrainConfig({ text: sample.code, file: sample.id })).not.toThrow();
    },
  );

  const shell = SAMPLES.filter((sample) => ['sh', 'bash', 'shell'].includes(sample.language));
  it.each(shell.map((sample) => [sample.id, sample] as const))(
    'checks the commands of %s against the CLI and the workspace',
    (_id, sample) => {
      const program = createProgram({
        terminal: new Terminal({ stdout: { write: () => true }, stderr: { write: () => true } }),
        exitCode: 0,
      } satisfies CliContext);
      const packages = workspacePackages();
      const names = new Set(packages.map((item) => item.name));
      const bins = new Set(
        packages.flatMap((item) => Object.keys((item.manifest.bin as Record<string, string> | undefined) ?? {})),
      );
      const problems: string[] = [];
      for (const line of sample.code
        .split('\n')
        .map((text) => text.replace(/#.*$/, '').trim())
        .filter(Boolean)) {
        for (const command of line.split(/&&|;/).map((part) => part.trim().replace(/^(\w+=\S*\s+)+/, ''))) {
          const words = command.split(/\s+/);
          const kiln = words.findIndex(
            (word, index) => word === 'kiln' && (index === 0 || ['pnpm', 'npx'].includes(words[index - 1])),
          );
          if (kiln >= 0) {
            const name = words[kiln + 1];
            if (name === undefined || name.startsWith('-')) continue;
            const definition = program.commands.find((candidate) => candidate.name() === name);
            if (definition === undefined) {
              problems.push(`unknown command: kiln ${name}`);
              continue;
            }
            const flags = new Set(
              [...definition.options, ...program.options]
                .flatMap((option) => [option.long, option.short])
                .filter(Boolean),
            );
            for (const word of words.slice(kiln + 2).filter((item) => item.startsWith('-'))) {
              if (!flags.has(word.split('=')[0]) && word !== '--help')
                problems.push(`unknown option of kiln ${name}: ${word}`);
            }
            continue;
          }
          // Packages a sample installs or filters by, and binaries it runs with npx, must exist.
          for (const word of words.filter((item) => /^(@kiln\/|kiln-backend-)/.test(item))) {
            const name = word.replace(/(?<=.)@[^/]*$/, '');
            if (!names.has(name)) problems.push(`no workspace package ${name}`);
          }
          if (words[0] === 'npx' && words[1] !== undefined && !words[1].startsWith('@') && !bins.has(words[1]))
            problems.push(`no package has the binary ${words[1]}`);
        }
      }
      expect(problems).toEqual([]);
    },
  );
});
