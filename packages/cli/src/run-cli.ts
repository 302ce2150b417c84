/**
 * The `kiln` program: commander parses argv, the command runs, and every error becomes a
 * message (`error: …` and its hint; the stack only with --debug or KILN_DEBUG=1) and an exit code.
 */
import { Command, CommanderError } from 'commander';
import { cliVersion, type CliContext } from './cli-context.js';
import { defineBenchCommand } from './commands/bench.js';
import { defineDoctorCommand } from './commands/doctor.js';
import { defineEvalCommand } from './commands/eval.js';
import { defineExportCommand } from './commands/export.js';
import { defineGenerateCommand } from './commands/generate.js';
import { defineInfoCommand } from './commands/info.js';
import { defineTokenizeCommand } from './commands/tokenize.js';
import { defineTrainCommand } from './commands/train.js';
import { describeError, exitCodeFor, ExitCode } from './exit-codes.js';
import { processStreams, Terminal, type CliStreams } from './output/terminal.js';

/** Runs `kiln` with `argv` (the arguments after the program name) and resolves to its exit code. */
export async function runCli(argv: readonly string[], streams: CliStreams = processStreams()): Promise<number> {
  const terminal = new Terminal(streams);
  const context: CliContext = { terminal, exitCode: ExitCode.ok };
  const program = createProgram(context, streams);
  const debug = argv.includes('--debug') || process.env.KILN_DEBUG === '1';
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return context.exitCode;
  } catch (error) {
    // Commander already printed its own usage errors.
    if (!(error instanceof CommanderError)) terminal.warn(describeError(error, debug));
    return exitCodeFor(error);
  }
}

/** The `kiln` program with every command defined (no argv parsed yet); streams default to the context's terminal's. */
export function createProgram(context: CliContext, streams: CliStreams = context.terminal.streams): Command {
  const program = new Command('kiln')
    .description('train and run small Llama-style language models on CUDA, Metal or the CPU')
    .version(cliVersion(), '-v, --version')
    .option('--debug', 'print stack traces on errors')
    .exitOverride()
    .showHelpAfterError('(run `kiln --help` or `kiln <command> --help` for usage)')
    .configureOutput({
      writeOut: (text) => void streams.stdout.write(text),
      writeErr: (text) => void streams.stderr.write(text),
    });
  defineInfoCommand(program, context);
  defineDoctorCommand(program, context);
  defineTrainCommand(program, context);
  defineGenerateCommand(program, context);
  defineBenchCommand(program, context);
  defineTokenizeCommand(program, context);
  defineEvalCommand(program, context);
  defineExportCommand(program, context);
  program.addHelpText(
    'after',
    [
      '',
      'Exit codes: 0 ok, 1 failure, 2 bad usage, config or data, 130 interrupted (after a checkpoint).',
      "Start with `kiln info`, then `kiln train` (the default model on kiln's own sources).",
    ].join('\n'),
  );
  return program;
}
