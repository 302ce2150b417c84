/** Reading one YAML config layer: syntax errors become ConfigErrors with line and column. */
import { readFileSync } from 'node:fs';
import { ConfigError } from '@kiln/core';
import { parseDocument } from 'yaml';

/** The text of a config file, or a ConfigError naming it. */
export function readConfigFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${file}: ${(error as Error).message}`, {
      hint: 'Check the path given to --config.',
      cause: error,
    });
  }
}

/** Parses YAML text (YAML 1.2: unique keys, no tabs as indentation) into plain values. */
export function parseYaml(text: string, source: string): unknown {
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    const lines = document.errors.map((error) => {
      const position = error.linePos?.[0];
      const where = position === undefined ? source : `${source}:${position.line}:${position.col}`;
      const summary = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
      return `\n  ${where}: YAML syntax error: ${summary}`;
    });
    throw new ConfigError(`cannot parse ${source}:${lines.join('')}`, {
      hint: 'Indent with spaces (not tabs), close every bracket and quote, and write each key once per section.',
    });
  }
  return document.toJS();
}
