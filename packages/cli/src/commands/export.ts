/**
 * `kiln export --model dir --output dir [--adapter dir --merge]`: writes a model as a Hugging Face
 * directory that transformers loads (config.json in the family's keys, model.safetensors in its
 * names and layouts, the tokenizer and generation files of the source copied). The model is a run
 * directory's newest good checkpoint or a model directory; with --adapter, --merge folds the LoRA
 * adapter into the base weights first (W + alpha/r·B·A). An adapter without --merge is refused:
 * it already is a PEFT directory that transformers + PEFT load next to the base.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '@kiln/core';
import { copyTokenizerFiles, mergeLoraAdapter, saveModelDirectory, type LoraAdapter } from '@kiln/trainer';
import { describeResolution, setUpBackend } from '../backend-setup.js';
import type { CliContext } from '../cli-context.js';
import { ExitCode, markUsageError } from '../exit-codes.js';
import { loadModelFrom } from '../model-loading.js';

interface ExportOptions {
  model: string;
  output: string;
  adapter?: string;
  merge?: boolean;
  device?: string;
  allowNonFinite?: boolean;
}

/** Registers `kiln export`. */
export function defineExportCommand(program: Command, context: CliContext): void {
  program
    .command('export')
    .description('write a model (with a LoRA adapter merged in) as a Hugging Face directory that transformers loads')
    .requiredOption('--model <dir>', 'a run directory (its newest checkpoint) or a model directory (config.json + model.safetensors)')
    .requiredOption('--output <dir>', 'the directory to write (config.json, model.safetensors, tokenizer files)')
    .option('--adapter <dir>', 'a LoRA adapter directory (PEFT format) to merge into the model (needs --merge)')
    .option('--merge', 'fold the --adapter into the base weights')
    .option('--device <device>', "where to merge: 'cpu' (default), 'cuda', 'metal' or a plugin's name", 'cpu')
    .option('--allow-non-finite', 'export weights that hold NaN or Infinity (refused by default)')
    .action(async (options: ExportOptions) => {
      context.exitCode = await runExport(options, context);
    });
}

async function runExport(options: ExportOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  if (options.adapter !== undefined && options.merge !== true) {
    throw markUsageError(new InvalidArgumentError('--adapter without --merge: kiln export writes merged models only', {
      hint: 'Add --merge to fold the adapter into the weights, or use the adapter directory as it is (transformers + PEFT load it next to the base model).',
    }));
  }
  if (options.merge === true && options.adapter === undefined) {
    throw markUsageError(new InvalidArgumentError('--merge needs --adapter <dir>: there is no adapter to merge', { hint: 'Pass the LoRA adapter directory with --adapter.' }));
  }
  const resolution = await setUpBackend({ device: options.device }, terminal);
  for (const line of describeResolution(resolution)) terminal.warn(line);
  const { model, path } = await loadModelFrom(options.model, resolution.backend, {
    onNotice: (message) => terminal.warn(`note: ${message}`),
    allowNonFinite: options.allowNonFinite === true,
    adapter: options.adapter,
  });
  const exported = model.adapter === undefined ? model : mergeLoraAdapter(model, model.adapter as LoraAdapter);
  try {
    await saveModelDirectory(options.output, exported);
    const copied = await copyTokenizerFiles(path, options.output);
    terminal.say(`wrote ${options.output} (${exported.family.architectureClass}${options.adapter === undefined ? '' : `, adapter ${options.adapter} merged`}; ${copied.length === 0 ? 'no tokenizer files to copy' : `copied ${copied.join(', ')}`})`);
  } finally {
    // The merged model took over the base model's tensors; the adapter stays the base model's to free.
    if (exported !== model) (model.adapter as LoraAdapter).dispose();
    exported.dispose();
  }
  return ExitCode.ok;
}
