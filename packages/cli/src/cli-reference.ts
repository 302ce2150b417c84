/**
 * The CLI reference (docs/cli.md) rendered from the commander definitions themselves: every
 * command, its arguments, every option with its default, the global options and the exit codes.
 * A test compares docs/cli.md with this output, so the reference cannot drift from the CLI.
 */
import type { Argument, Command, Option } from 'commander';
import { createProgram } from './run-cli.js';
import { ExitCode } from './exit-codes.js';
import { Terminal } from './output/terminal.js';

/** Environment variables the CLI reads (through core, the trainer or itself). */
const ENVIRONMENT: ReadonlyArray<[string, string]> = [
  [
    'KILN_DEVICE',
    "the backend when `--device` is not given: `auto` (default), `cpu`, `cuda`, `cuda:1`, `metal` or a plugin's name",
  ],
  [
    'KILN_BACKENDS',
    'comma-separated package names or paths of backends to load besides the installed `@kiln/backend-*` and `kiln-backend-*` packages',
  ],
  ['KILN_PROBE_TIMEOUT_MS', "how long a backend's `probe()` may take before it counts as unavailable (default 5000)"],
  [
    'KILN_FALLBACK',
    'what to do when a backend lacks a kernel for a dtype: `warn` (default: run it in f32 and say so once), `allow`, `error`',
  ],
  ['KILN_DEBUG', '`1` prints stack traces with errors (as `--debug`)'],
  ['NO_COLOR', 'any value turns off colors'],
];

const EXIT_CODES: ReadonlyArray<[number, string]> = [
  [ExitCode.ok, 'success'],
  [
    ExitCode.failure,
    'failure: training diverged, a backend failed or was rejected, a damaged checkpoint, a non-finite evaluation loss or logit, a run directory another run holds, an unexpected error; `kiln doctor` found the default path broken',
  ],
  [
    ExitCode.usage,
    'bad usage, config or data: an unknown option or command, a bad argument, a config or data error, a `--device`/`KILN_DEVICE` that no installed backend provides',
  ],
  [ExitCode.interrupted, 'interrupted by Ctrl+C (SIGINT), after writing a checkpoint'],
  [ExitCode.terminated, 'terminated by SIGTERM (`docker stop`, systemd, a scheduler), after writing a checkpoint'],
];

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function defaultOf(option: Option): string {
  if (option.negate) return '';
  const value: unknown = option.defaultValue;
  if (value === undefined) return '';
  return `\`${JSON.stringify(value)}\``;
}

function optionRows(options: readonly Option[]): string[] {
  const rows = ['| option | default | what it does |', '|---|---|---|'];
  for (const option of options)
    rows.push(`| \`${cell(option.flags)}\` | ${defaultOf(option)} | ${cell(option.description)} |`);
  return rows;
}

function argumentText(argument: Argument): string {
  const name = argument.name() + (argument.variadic ? '...' : '');
  return argument.required ? `<${name}>` : `[${name}]`;
}

/** docs/cli.md as Markdown. */
export function renderCliReference(
  program: Command = createProgram({
    terminal: new Terminal({ stdout: { write: () => true }, stderr: { write: () => true } }),
    exitCode: 0,
  }),
): string {
  const lines = [
    '# CLI reference',
    '',
    '<!-- Generated from the commander definitions in packages/cli/src/commands/ by `pnpm --filter @kiln/cli docs`. Do not edit: a test fails when this file differs from the CLI. -->',
    '',
    `\`kiln\` — ${program.description()}. Every command takes \`--help\`.`,
    '',
    '| command | what it does |',
    '|---|---|',
  ];
  for (const command of program.commands)
    lines.push(`| [\`kiln ${command.name()}\`](#kiln-${command.name()}) | ${cell(command.description())} |`);
  lines.push('', '## Global options', '', ...optionRows(program.options), '');
  for (const command of program.commands) {
    const args = command.registeredArguments.map(argumentText).join(' ');
    lines.push(
      `## kiln ${command.name()}`,
      '',
      command.description().replace(/^./, (first) => first.toUpperCase()) + '.',
      '',
      '```text',
      `kiln ${command.name()}${args ? ` ${args}` : ''} [options]`,
      '```',
      '',
    );
    if (command.registeredArguments.length > 0) {
      lines.push('| argument | what it is |', '|---|---|');
      for (const argument of command.registeredArguments)
        lines.push(`| \`${argumentText(argument)}\` | ${cell(argument.description)} |`);
      lines.push('');
    }
    if (command.options.length > 0) lines.push(...optionRows(command.options), '');
  }
  lines.push('## Environment', '', '| variable | what it does |', '|---|---|');
  for (const [name, text] of ENVIRONMENT) lines.push(`| \`${name}\` | ${cell(text)} |`);
  lines.push('', '## Exit codes', '', '| code | meaning |', '|---|---|');
  for (const [code, text] of EXIT_CODES) lines.push(`| ${code} | ${cell(text)} |`);
  return `${lines.join('\n')}\n`;
}
