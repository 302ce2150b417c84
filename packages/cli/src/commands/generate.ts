/**
 * `kiln generate --checkpoint dir`: loads a model (a run directory's newest checkpoint or a
 * model directory) on the resolved backend, whatever backend trained it, and streams the
 * continuation of the prompt to stdout as tokens come.
 */
import type { Command } from 'commander';
import { generate } from '@kiln/trainer';
import { describeResolution, setUpBackend } from '../backend-setup.js';
import { integerArgument, numberArgument, type CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { loadModelFrom } from '../model-loading.js';
import { TokenTextStream, promptTokens } from '../output/byte-stream.js';

interface GenerateCommandOptions {
  checkpoint: string;
  prompt: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed: number;
  device?: string;
  echo: boolean;
  quiet?: boolean;
}

/** Registers `kiln generate`. */
export function defineGenerateCommand(program: Command, context: CliContext): void {
  program
    .command('generate')
    .description('generate text from a trained model, streamed as it comes')
    .requiredOption('--checkpoint <dir>', 'a run directory (its newest checkpoint) or a model directory (config.json + model.safetensors)')
    .option('--prompt <text>', 'text to continue (token ids like "1 2 3" for non-byte vocabularies)', '\n')
    .option('--max-tokens <n>', 'tokens to generate', integerArgument(1), 200)
    .option('--temperature <t>', 'softmax temperature; 0 is greedy', numberArgument(0), 0.8)
    .option('--top-k <k>', 'sample only from the k most likely tokens', integerArgument(1))
    .option('--top-p <p>', 'nucleus sampling: the smallest set reaching probability p', numberArgument(0, 1))
    .option('--seed <n>', 'sampling seed (same seed, same text)', integerArgument(0), 0)
    .option('--device <device>', "'auto', 'cpu', 'cuda', 'metal' or a plugin's name")
    .option('--no-echo', 'do not print the prompt before the generated text')
    .option('--quiet', 'print only the text (no backend line on stderr)')
    .action(async (options: GenerateCommandOptions) => {
      context.exitCode = await runGenerate(options, context);
    });
}

async function runGenerate(options: GenerateCommandOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  const resolution = await setUpBackend({ device: options.device }, terminal);
  if (options.quiet !== true) for (const line of describeResolution(resolution)) terminal.warn(line);
  const { model, path } = await loadModelFrom(options.checkpoint, resolution.backend, (message) => terminal.warn(`note: ${message}`));
  if (options.quiet !== true) terminal.warn(`model: ${path}`);
  try {
    const stream = new TokenTextStream(model.config.vocabSize);
    if (options.echo) terminal.write(options.prompt);
    await generate(model, promptTokens(options.prompt, model.config.vocabSize), {
      maxTokens: options.maxTokens,
      temperature: options.temperature,
      topK: options.topK,
      topP: options.topP,
      seed: options.seed,
      onToken: (id) => {
        const text = stream.push(id);
        if (text !== '') terminal.write(text);
      },
    });
    terminal.write(`${stream.flush()}\n`);
  } finally {
    model.dispose();
  }
  return ExitCode.ok;
}
