/**
 * @kiln/cli — the `kiln` command, also callable from code: `await runCli(['info', '--json'])`
 * resolves to the exit code.
 */
export { runCli, createProgram } from './run-cli.js';
export type { CliContext } from './cli-context.js';
export { renderCliReference } from './cli-reference.js';
export { renderConfigSchema } from './config-schema.js';
export { ExitCode, exitCodeFor, describeError } from './exit-codes.js';
export { Terminal, type CliStreams, type OutputStream } from './output/terminal.js';
export { loadEmbeddedCorpus, type Corpus } from './corpus.js';
export type { InfoReport } from './commands/info.js';
export type { DoctorCheck } from './commands/doctor.js';
