/**
 * The embedded default corpus: kiln's own sources and docs, bundled as dist/corpus.txt at build
 * time. Running from sources (tests), the same text is collected from the repository.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { DataError } from '@kiln/core';
import { collectCorpus, findRepositoryRoot } from '../scripts/collect-corpus.mjs';

/** A corpus as the trainer takes it. */
export interface Corpus {
  /** The text (byte-level tokenized by the trainer). */
  text: string;
  /** Where it came from, for messages. */
  description: string;
}

let cached: Corpus | undefined;

/** The embedded corpus (dist/corpus.txt), or the same text collected from the repository. */
export async function loadEmbeddedCorpus(): Promise<Corpus> {
  if (cached !== undefined) return cached;
  const embedded = new URL('./corpus.txt', import.meta.url);
  try {
    cached = { text: await readFile(embedded, 'utf8'), description: 'embedded corpus (kiln sources and docs)' };
    return cached;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const root = findRepositoryRoot(fileURLToPath(new URL('.', import.meta.url)));
  const collected = root === undefined ? undefined : collectCorpus(root);
  if (collected === undefined || collected.files.length === 0) {
    throw new DataError(
      `The embedded corpus ${fileURLToPath(embedded)} is missing and no kiln repository is around to collect it from`,
      {
        hint: 'Rebuild @kiln/cli (`pnpm --filter @kiln/cli build`), or pass --data <path> or --sequences <file.json>.',
      },
    );
  }
  cached = { text: collected.text, description: `kiln sources and docs collected from ${root}` };
  return cached;
}
