/**
 * Build step of @kiln/cli: writes dist/corpus.txt, the embedded default training corpus (kiln's
 * own sources and docs, see collect-corpus.mjs), and prints its size.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { collectCorpus, findRepositoryRoot } from './collect-corpus.mjs';

const packageDirectory = fileURLToPath(new URL('..', import.meta.url));
const root = findRepositoryRoot(packageDirectory);
if (root === undefined) {
  console.error(
    `embed-corpus: no pnpm-workspace.yaml above ${packageDirectory}; run the build inside the kiln repository.`,
  );
  process.exit(1);
}
const { text, files } = collectCorpus(root);
if (files.length === 0) {
  console.error(`embed-corpus: no sources or docs found under ${root}.`);
  process.exit(1);
}
const output = fileURLToPath(new URL('../dist/corpus.txt', import.meta.url));
mkdirSync(fileURLToPath(new URL('../dist/', import.meta.url)), { recursive: true });
writeFileSync(output, text);
const kibibytes = (Buffer.byteLength(text) / 1024).toFixed(1);
console.log(`embed-corpus: ${files.length} files, ${kibibytes} KiB -> dist/corpus.txt`);
