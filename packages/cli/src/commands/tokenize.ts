/**
 * `kiln tokenize <input> --output file.kiln-tokens`: a text/code file or directory (walked like
 * `--data`: sorted, node_modules/.git/dist skipped, binary files skipped and listed) becomes a
 * binary token file of byte-level tokens that training reads in chunks.
 */
import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { InvalidArgumentError } from '@kiln/core';
import { BYTE_VOCAB_SIZE, readTextTree, writeTokenFile } from '@kiln/trainer';
import type { CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { formatBytes, formatInteger } from '../output/format.js';

interface TokenizeOptions {
  output: string;
  json?: boolean;
}

/** Registers `kiln tokenize`. */
export function defineTokenizeCommand(program: Command, context: CliContext): void {
  program
    .command('tokenize')
    .description('turn a text/code file or directory into a binary token file (byte-level) for --data')
    .argument('<input>', 'a text/code file or a directory of them')
    .requiredOption('--output <file>', 'the token file to write (*.kiln-tokens)')
    .option('--json', 'print the summary as JSON')
    .action(async (input: string, options: TokenizeOptions) => {
      context.exitCode = await runTokenize(input, options, context);
    });
}

async function runTokenize(input: string, options: TokenizeOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  if (!options.output.endsWith('.kiln-tokens')) {
    throw new InvalidArgumentError(`--output ${options.output} does not end in .kiln-tokens`, {
      hint: 'Name the file *.kiln-tokens: `kiln train --data <file>` recognizes token files by that extension.',
    });
  }
  const tree = await readTextTree(input);
  // Byte-level: each UTF-8 byte is a token, so the bytes themselves are the token stream.
  const info = await writeTokenFile(options.output, tree.bytes, BYTE_VOCAB_SIZE);
  const fileBytes = (await stat(options.output)).size;
  if (options.json === true) {
    terminal.json({ input, output: options.output, files: tree.files.length, tokens: info.tokenCount, bytesPerToken: info.bytesPerToken, vocabSize: BYTE_VOCAB_SIZE, fileBytes, warnings: tree.warnings });
    return ExitCode.ok;
  }
  for (const warning of tree.warnings) terminal.warn(`note: ${warning}`);
  terminal.say(`read ${formatInteger(tree.files.length)} file(s) from ${input} (${formatBytes(tree.bytes.length)})`);
  terminal.say(`wrote ${formatInteger(info.tokenCount)} tokens (vocab ${BYTE_VOCAB_SIZE}, ${info.bytesPerToken} bytes/token) to ${options.output} (${formatBytes(fileBytes)})`);
  terminal.say(`train on it with: kiln train --data ${options.output}`);
  return ExitCode.ok;
}
