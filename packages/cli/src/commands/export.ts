/**
 * `kiln export --model dir --output dir [--adapter dir] [--merge]`: writes a model as a Hugging
 * Face directory that transformers loads (config.json in the family's keys, model.safetensors in
 * its names and layouts, the tokenizer and generation files of the source copied). The model is a
 * run directory's newest good checkpoint or a model directory. A LoRA adapter (--adapter, or the
 * checkpoints of a LoRA run) is folded into the base weights with --merge (W + alpha/r·B·A); an
 * adapter without --merge is refused: it already is a PEFT directory that transformers + PEFT
 * load next to the base.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '@kiln/core';
import {
  baseModelDirectoryOf,
  copyTokenizerFiles,
  mergeLoraAdapter,
  MODEL_FILE_DTYPES,
  saveModelDirectory,
  tokenizerDirectoryOf,
  type LoraAdapter,
  type ModelFileDType,
} from '@kiln/trainer';
import { describeResolution, setUpBackend } from '../backend-setup.js';
import { choiceArgument, type CliContext } from '../cli-context.js';
import { ExitCode, markUsageError } from '../exit-codes.js';
import { loadModelFrom } from '../model-loading.js';

interface ExportOptions {
  model: string;
  output: string;
  adapter?: string;
  merge?: boolean;
  device?: string;
  dtype: ModelFileDType;
  allowNonFinite?: boolean;
}

/** Registers `kiln export`. */
export function defineExportCommand(program: Command, context: CliContext): void {
  program
    .command('export')
    .description('write a model (with a LoRA adapter merged in) as a Hugging Face directory that transformers loads')
    .requiredOption(
      '--model <dir>',
      'a run directory (its newest checkpoint) or a model directory (config.json + model.safetensors)',
    )
    .requiredOption('--output <dir>', 'the directory to write (config.json, model.safetensors, tokenizer files)')
    .option('--adapter <dir>', 'a LoRA adapter directory (PEFT format) to merge into the model (needs --merge)')
    .option('--merge', 'fold the --adapter into the base weights')
    .option('--device <device>', "where to merge: 'cpu' (default), 'cuda', 'metal' or a plugin's name", 'cpu')
    .option(
      '--dtype <dtype>',
      `weights dtype of model.safetensors: ${MODEL_FILE_DTYPES.join(', ')} (bf16 halves the file, as most Hub models ship; f16 refuses weights beyond ±65504)`,
      choiceArgument(MODEL_FILE_DTYPES),
      'f32',
    )
    .option('--allow-non-finite', 'export weights that hold NaN or Infinity (refused by default)')
    .action(async (options: ExportOptions) => {
      context.exitCode = await runExport(options, context);
    });
}

async function runExport(options: ExportOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  const resolution = await setUpBackend({ device: options.device }, terminal);
  for (const line of describeResolution(resolution)) terminal.warn(line);
  const { model, path, adapter } = await loadModelFrom(options.model, resolution.backend, {
    onNotice: (message) => terminal.warn(`note: ${message}`),
    allowNonFinite: options.allowNonFinite === true,
    adapter: options.adapter,
  });
  const hasAdapter = model.adapter !== undefined;
  if (hasAdapter !== (options.merge === true)) {
    model.dispose();
    throw markUsageError(
      new InvalidArgumentError(
        hasAdapter
          ? `${adapter ?? path} is a LoRA adapter and --merge was not given: kiln export writes merged models only`
          : `--merge: ${path} has no LoRA adapter to merge`,
        {
          hint: hasAdapter
            ? 'Add --merge to fold the adapter into the weights, or use the adapter directory as it is (transformers + PEFT load it next to the base model).'
            : 'Pass the adapter with --adapter <dir>, or leave --merge out to export the model as it is.',
        },
      ),
    );
  }
  const exported = hasAdapter ? mergeLoraAdapter(model, model.adapter as LoraAdapter) : model;
  try {
    await saveModelDirectory(options.output, exported, {}, options.dtype);
    // The tokenizer and generation files of the model, or of the model a fine-tuning run started from.
    const source = (await tokenizerDirectoryOf(path)) ?? (await baseModelDirectoryOf(path)) ?? path;
    const copied = await copyTokenizerFiles(source, options.output);
    terminal.say(
      `wrote ${options.output} (${exported.family.architectureClass}, ${options.dtype}${hasAdapter ? `, adapter ${adapter ?? path} merged` : ''}; ${copied.length === 0 ? 'no tokenizer files to copy' : `copied ${copied.join(', ')}`})`,
    );
  } finally {
    // The merged model took over the base model's tensors; the adapter stays the base model's to free.
    if (exported !== model) (model.adapter as LoraAdapter).dispose();
    exported.dispose();
  }
  return ExitCode.ok;
}
