/** Types of collect-corpus.mjs (the embedded corpus collector shared by the build and the CLI). */

/** One file of the corpus. */
export interface CorpusFile {
  /** Path relative to the repository root, '/'-separated. */
  path: string;
  /** Bytes of its text in the corpus. */
  bytes: number;
}

/** The nearest ancestor of `start` holding pnpm-workspace.yaml, or undefined. */
export function findRepositoryRoot(start: string): string | undefined;
/** The corpus files of the repository at `root`, as sorted '/'-separated relative paths. */
export function listCorpusFiles(root: string): string[];
/** The corpus text of the repository at `root` and the files it holds. */
export function collectCorpus(root: string): { text: string; files: CorpusFile[] };
