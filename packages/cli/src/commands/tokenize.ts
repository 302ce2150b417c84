/**
 * `kiln tokenize <input...> [--output file.kiln-tokens] [--tokenizer <model dir|tokenizer.json|byte>]`:
 * text/code files or directories (walked like `--data`: sorted, .gitignore honoured, include and
 * exclude globs, binary files skipped by content) become one binary token file that training reads
 * window by window. Files are read in bounded chunks and tokens are written as they come, so a
 * folder larger than memory works; progress is shown while it runs. The file records the
 * tokenizer (name and hash) and its vocabulary, and uses the narrowest token width that fits.
 */
import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { InvalidArgumentError } from '@kiln/core';
import {
  describeExtensions,
  listDataFiles,
  loadTokenizer,
  TOKEN_FILE_EXTENSION,
  TokenFileWriter,
  tokenizeFiles,
  type ExtensionCount,
  type TokenizeProgress,
  type Tokenizer,
} from '@kiln/trainer';
import type { CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { formatBytes, formatInteger } from '../output/format.js';
import type { Terminal } from '../output/terminal.js';

interface TokenizeOptions {
  output?: string;
  tokenizer: string;
  include?: string[];
  exclude?: string[];
  gitignore: boolean;
  json?: boolean;
}

/** Where the inputs come from, for error hints. */
const INPUT_SOURCE = 'the input of `kiln tokenize`';
/** Exit status after SIGTERM (128 + 15), as a shell reports a process the signal ended. */
const SIGTERM_EXIT_CODE = 143;
/** Seconds between progress lines when stdout is not a terminal. */
const PROGRESS_LINE_SECONDS = 5;

/** Registers `kiln tokenize`. */
export function defineTokenizeCommand(program: Command, context: CliContext): void {
  program
    .command('tokenize')
    .description('turn text/code files or directories into a binary token file for --data')
    .argument('<input...>', 'text/code files or directories of them')
    .option('--output <file>', 'the token file to write, *.kiln-tokens (default: <first input>.kiln-tokens)')
    .option(
      '--tokenizer <tokenizer>',
      "a model directory holding tokenizer.json, a tokenizer.json file, or 'byte'",
      'byte',
    )
    .option('--include <glob...>', "only files matching these globs under a directory (e.g. '**/*.ts')")
    .option(
      '--exclude <glob...>',
      "leave out files matching these globs (e.g. 'dist/**'); .git and node_modules always are",
    )
    .option('--no-gitignore', 'read files that .gitignore files ignore')
    .option('--json', 'print the summary as JSON')
    .action(async (inputs: string[], options: TokenizeOptions) => {
      context.exitCode = await runTokenize(inputs, options, context);
    });
}

/** `<input>.kiln-tokens` for the first input (a trailing slash dropped). */
export function defaultTokenFilePath(input: string): string {
  return `${input.replace(/[/\\]+$/, '') || input}${TOKEN_FILE_EXTENSION}`;
}

function progressReporter(
  terminal: Terminal,
  enabled: boolean,
): { update(progress: TokenizeProgress): void; done(): void } {
  let last = 0;
  let shown = false;
  const line = (progress: TokenizeProgress): string => {
    const percent = progress.totalBytes > 0 ? Math.floor((100 * progress.bytesRead) / progress.totalBytes) : 100;
    return `tokenizing: ${percent}% · ${formatInteger(progress.filesDone)}/${formatInteger(progress.fileCount)} files · ${formatBytes(progress.bytesRead)} · ${formatInteger(progress.tokens)} tokens`;
  };
  return {
    update(progress: TokenizeProgress): void {
      if (!enabled) return;
      const now = performance.now();
      if (terminal.interactive) {
        if (now - last < 100) return;
        terminal.humanStream.write(`\r${line(progress)}`);
      } else {
        if (now - last < PROGRESS_LINE_SECONDS * 1000) return;
        terminal.say(line(progress));
      }
      last = now;
      shown = true;
    },
    done(): void {
      if (shown && terminal.interactive) terminal.humanStream.write('\r\u001b[K');
    },
  };
}

async function runTokenize(inputs: string[], options: TokenizeOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  const output = options.output ?? defaultTokenFilePath(inputs[0]);
  if (!output.endsWith(TOKEN_FILE_EXTENSION)) {
    throw new InvalidArgumentError(`--output ${output} does not end in ${TOKEN_FILE_EXTENSION}`, {
      hint: `Name the file *${TOKEN_FILE_EXTENSION}: \`kiln train --data <file>\` recognizes token files by that extension.`,
    });
  }
  const tokenizer: Tokenizer = await loadTokenizer(options.tokenizer);
  const filter = {
    include: options.include,
    exclude: options.exclude,
    gitignore: options.gitignore,
    source: INPUT_SOURCE,
  };
  // List everything first: a bad input fails before any file is written.
  const lists = [];
  for (const input of inputs) lists.push(await listDataFiles(input, filter));
  const writer = await TokenFileWriter.create(output, {
    vocabSize: tokenizer.vocabSize,
    tokenizer: { name: tokenizer.name, hash: tokenizer.hash },
  });
  const progress = progressReporter(terminal, options.json !== true);
  // Interrupted (Ctrl+C, SIGTERM): remove the partial temporary file, then exit as the signal asks.
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupted = signal;
    // The next append fails on the aborted writer and ends the loop below.
    void writer.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const files: string[] = [];
  const notes: string[] = [];
  const byExtension = new Map<string, ExtensionCount>();
  let bytes = 0;
  let info;
  try {
    let tokensBefore = 0;
    let bytesBefore = 0;
    for (const list of lists) {
      const read = await tokenizeFiles(list, tokenizer, (ids) => writer.append(ids), {
        onProgress: (event) =>
          progress.update({ ...event, bytesRead: bytesBefore + event.bytesRead, tokens: tokensBefore + event.tokens }),
      });
      files.push(...read.files);
      notes.push(...read.notes);
      for (const [extension, count] of read.byExtension) {
        const total = byExtension.get(extension) ?? { files: 0, bytes: 0 };
        byExtension.set(extension, { files: total.files + count.files, bytes: total.bytes + count.bytes });
      }
      bytes += read.bytes;
      tokensBefore += read.tokens;
      bytesBefore += read.bytes;
    }
    info = await writer.finish();
  } catch (error) {
    await writer.abort();
    if (interrupted === undefined) throw error;
  } finally {
    progress.done();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (interrupted !== undefined || info === undefined) {
    terminal.warn(`interrupted (${interrupted ?? 'signal'}): ${output} was not written`);
    return interrupted === 'SIGTERM' ? SIGTERM_EXIT_CODE : ExitCode.interrupted;
  }
  const fileBytes = (await stat(output)).size;
  const extensions = Object.fromEntries([...byExtension].map(([extension, count]) => [extension, count.files]));
  if (options.json === true) {
    terminal.json({
      inputs,
      output,
      files: files.length,
      extensions,
      bytes,
      tokens: info.tokenCount,
      bytesPerToken: info.bytesPerToken,
      vocabSize: tokenizer.vocabSize,
      tokenizer: { name: tokenizer.name, hash: tokenizer.hash },
      fileBytes,
      notes,
    });
    return ExitCode.ok;
  }
  for (const note of notes) terminal.warn(`note: ${note}`);
  const fileCount = `${formatInteger(files.length)} file${files.length === 1 ? '' : 's'}`;
  terminal.say(
    `read ${fileCount} from ${inputs.join(', ')} (${describeExtensions(byExtension)}; ${formatBytes(bytes)})`,
  );
  terminal.say(
    `wrote ${formatInteger(info.tokenCount)} tokens (tokenizer ${tokenizer.name}, vocab ${formatInteger(tokenizer.vocabSize)}, ${info.bytesPerToken} byte${info.bytesPerToken === 1 ? '' : 's'}/token) to ${output} (${formatBytes(fileBytes)})`,
  );
  const model = options.tokenizer.endsWith('.json') ? '<model directory>' : options.tokenizer;
  terminal.say(
    tokenizer.name === 'byte'
      ? `train on it with: kiln train --data ${output}`
      : `fine-tune on it with: kiln train --init-from ${model} --data ${output}`,
  );
  return ExitCode.ok;
}
