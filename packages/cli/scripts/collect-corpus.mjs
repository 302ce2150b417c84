/**
 * Collects kiln's own TypeScript sources and docs into one text: the embedded default training
 * corpus of `kiln train`. Plain JavaScript so both the build script (embed-corpus.mjs) and the
 * CLI's sources (src/corpus.ts, when run from the repository in tests) share one definition.
 *
 * Included, relative to the repository root: packages/<name>/src/**\/*.ts, docs/**\/*.md,
 * README.md and packages/<name>/README.md. Excluded: declaration files (*.d.ts), anything under
 * node_modules or dist, and files marked as generated. Paths are sorted (code-point order) so the
 * text, and hence every training run, is the same on every machine. Each file is preceded by a
 * `// file: <path>` line.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', '.git', '.turbo', 'build', 'coverage']);
const GENERATED_MARKERS = ['@generated', 'DO NOT EDIT'];

/** The nearest ancestor of `start` holding pnpm-workspace.yaml, or undefined. */
export function findRepositoryRoot(start) {
  let directory = resolve(start);
  for (;;) {
    if (existsSync(join(directory, 'pnpm-workspace.yaml'))) return directory;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** The corpus files of the repository at `root`, as sorted '/'-separated relative paths. */
export function listCorpusFiles(root) {
  const files = [];
  const add = (relative) => {
    if (isFile(join(root, relative))) files.push(relative);
  };
  add('README.md');
  for (const name of listDirectory(join(root, 'packages'))) {
    add(`packages/${name}/README.md`);
    walk(root, `packages/${name}/src`, (path) => path.endsWith('.ts') && !path.endsWith('.d.ts'), files);
  }
  walk(root, 'docs', (path) => path.endsWith('.md'), files);
  const unique = [...new Set(files)].filter((path) => !isGenerated(join(root, path)));
  return unique.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The corpus text of the repository at `root` and the files it holds ({ path, bytes }). */
export function collectCorpus(root) {
  const parts = [];
  const files = [];
  for (const path of listCorpusFiles(root)) {
    let content = readFileSync(join(root, path), 'utf8');
    if (!content.endsWith('\n')) content += '\n';
    parts.push(`// file: ${path}\n${content}`);
    files.push({ path, bytes: Buffer.byteLength(content) });
  }
  return { text: parts.join('\n'), files };
}

function walk(root, relative, accept, files) {
  const absolute = join(root, relative);
  for (const name of listDirectory(absolute)) {
    if (SKIPPED_DIRECTORIES.has(name)) continue;
    const child = `${relative}/${name}`;
    const info = statSync(join(root, child), { throwIfNoEntry: false });
    if (info === undefined) continue;
    if (info.isDirectory()) walk(root, child, accept, files);
    else if (info.isFile() && accept(child)) files.push(child);
  }
}

function isGenerated(path) {
  const head = readFileSync(path, 'utf8').slice(0, 400);
  return GENERATED_MARKERS.some((marker) => head.includes(marker));
}

function listDirectory(path) {
  try {
    return readdirSync(path).sort();
  } catch {
    return [];
  }
}

function isFile(path) {
  return statSync(path, { throwIfNoEntry: false })?.isFile() === true;
}
