/**
 * `kiln generate --model dir [--adapter dir]`: loads a model (a run directory's newest good
 * checkpoint, a kiln model directory verified against its checksums, or a Hugging Face model
 * directory of any supported family, optionally with a PEFT LoRA adapter) on the resolved
 * backend, whatever backend trained it, and streams the continuation of the prompt to stdout as
 * tokens come, decoded with the model's tokenizer (tokenizer.json) and stopping at its eos token;
 * kiln's byte-level models keep their byte prompts. A model that cannot generate at its full
 * context on the device is refused first.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '@kiln/core';
import { assertGenerationFits, generate, modelTokenizer } from '@kiln/trainer';
import { reportResolution, setUpBackend } from '../backend-setup.js';
import { integerArgument, numberArgument, type CliContext } from '../cli-context.js';
import { ExitCode, markUsageError } from '../exit-codes.js';
import { loadModelFrom } from '../model-loading.js';
import { TokenTextStream, promptTokens } from '../output/byte-stream.js';

interface GenerateCommandOptions {
  model?: string;
  checkpoint?: string;
  adapter?: string;
  tokenizer?: string;
  prompt: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed: number;
  device?: string;
  echo: boolean;
  quiet?: boolean;
  allowNonFinite?: boolean;
}

/** Registers `kiln generate`. */
export function defineGenerateCommand(program: Command, context: CliContext): void {
  program
    .command('generate')
    .description('generate text from a trained model, streamed as it comes')
    .option(
      '--model <dir>',
      'a run directory (its newest checkpoint) or a model directory (config.json + model.safetensors, kiln or Hugging Face)',
    )
    .option('--checkpoint <dir>', 'the same as --model (its former name)')
    .option(
      '--adapter <dir>',
      'a LoRA adapter directory (PEFT format: adapter_config.json + adapter_model.safetensors) to apply to the model',
    )
    .option(
      '--tokenizer <path>',
      "tokenizer to use instead of the model directory's: a directory, a tokenizer.json, or 'byte'",
    )
    .option('--prompt <text>', 'text to continue (token ids like "1 2 3" for non-byte vocabularies)', '\n')
    .option('--max-tokens <n>', 'tokens to generate', integerArgument(1), 200)
    .option('--temperature <t>', 'softmax temperature; 0 is greedy', numberArgument(0), 0.8)
    .option('--top-k <k>', 'sample only from the k most likely tokens', integerArgument(1))
    .option('--top-p <p>', 'nucleus sampling: the smallest set reaching probability p', numberArgument(0, 1))
    .option('--seed <n>', 'sampling seed (same seed, same text)', integerArgument(0), 0)
    .option('--device <device>', "'auto', 'cpu', 'cuda', 'metal' or a plugin's name")
    .option('--no-echo', 'do not print the prompt before the generated text')
    .option('--quiet', 'print only the text (no backend line on stderr)')
    .option(
      '--allow-non-finite',
      'load weights that hold NaN or Infinity (refused by default: the checkpoint is damaged or the run diverged)',
    )
    .action(async (options: GenerateCommandOptions) => {
      context.exitCode = await runGenerate(options, context);
    });
}

async function runGenerate(options: GenerateCommandOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  const resolution = await setUpBackend({ device: options.device }, terminal);
  if (options.quiet !== true) reportResolution(resolution, terminal, true);
  const directory = modelOption(options);
  const { model, path, adapter } = await loadModelFrom(directory, resolution.backend, {
    onNotice: (message) => terminal.warn(`note: ${message}`),
    allowNonFinite: options.allowNonFinite === true,
    adapter: options.adapter,
    // A model whose KV cache at its full context cannot fit is refused before any weight is read.
    checkModelConfig: (config, source) => assertGenerationFits(config, resolution.backend, { source }),
  });
  if (options.quiet !== true) terminal.warn(`model: ${path}${adapter === undefined ? '' : ` + adapter ${adapter}`}`);
  try {
    const tokenizer = await modelTokenizer(path, model.config, options.tokenizer);
    const prompt =
      tokenizer === undefined ? promptTokens(options.prompt, model.config.vocabSize) : tokenizer.encode(options.prompt);
    const stream =
      tokenizer === undefined
        ? new TokenTextStream(model.config.vocabSize)
        : tokenizer.createDecoder({ context: prompt });
    const stopTokens = [
      ...new Set([
        ...(tokenizer?.eosId == null ? [] : [tokenizer.eosId]),
        ...(model.config.architecture?.eosTokenIds ?? []),
      ]),
    ];
    const note = promptWindowNote(prompt.length, model.config.contextLength);
    if (note !== undefined) terminal.warn(`note: ${note}`);
    if (options.echo) terminal.write(options.prompt);
    await generate(model, prompt, {
      maxTokens: options.maxTokens,
      temperature: options.temperature,
      topK: options.topK,
      topP: options.topP,
      seed: options.seed,
      stopTokens,
      vocabularyLimit: tokenizer?.vocabSize,
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

/** The --model directory (--checkpoint is its former name; giving both is refused). */
function modelOption(options: GenerateCommandOptions): string {
  if (options.model !== undefined && options.checkpoint !== undefined && options.model !== options.checkpoint) {
    throw markUsageError(
      new InvalidArgumentError(
        `--model ${options.model} and --checkpoint ${options.checkpoint} name different models`,
        {
          hint: 'Pass one of them (--checkpoint is the former name of --model).',
        },
      ),
    );
  }
  const directory = options.model ?? options.checkpoint;
  if (directory === undefined) {
    throw markUsageError(
      new InvalidArgumentError('kiln generate needs --model <dir>', {
        hint: 'Pass a run directory (e.g. ./kiln-run) or a model directory (config.json + model.safetensors), e.g. --model ./SmolLM2-135M.',
      }),
    );
  }
  return directory;
}

/** The note for a prompt longer than the model's context: the model reads only the end of it. */
function promptWindowNote(promptTokens: number, contextLength: number): string | undefined {
  if (promptTokens <= contextLength) return undefined;
  return (
    `the prompt is ${promptTokens} tokens, more than the model's context of ${contextLength}: the model reads only its last ${contextLength} tokens ` +
    `(the first ${promptTokens - contextLength} are ignored), and each new token slides that window on by one`
  );
}
