/**
 * Reading one YAML config layer: syntax errors become ConfigErrors with line and column, and
 * input that would exhaust the parser is refused first, naming the file — a file over
 * MAX_CONFIG_BYTES, flow collections nested deeper than MAX_FLOW_DEPTH (the parser's recursion
 * overflows a few thousand levels down, and formatting that error can abort the process), and
 * alias expansion over MAX_ALIAS_COUNT (the "billion laughs" bomb: a few lines of anchors that
 * expand to gigabytes).
 */
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '@kiln/core';
import { parseDocument } from 'yaml';
import { formatBytes } from './memory-estimate.js';

/** Largest config file read (a real one is a few hundred bytes). */
export const MAX_CONFIG_BYTES = 1024 * 1024;
/** Deepest nesting of [ ] and { } accepted. */
export const MAX_FLOW_DEPTH = 64;
/** The `yaml` package's alias budget: how many aliased nodes (weighted by their size) may be expanded. */
export const MAX_ALIAS_COUNT = 100;

const LIMIT_HINT =
  'A kiln config is a short YAML mapping of sections (seed, device, model, data, optimizer, schedule, checkpoint); check that --config names the right file.';

/** The text of a config file, or a ConfigError naming it. */
export function readConfigFile(file: string): string {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${file}: ${(error as Error).message}`, {
      hint: 'Check the path given to --config.',
      cause: error,
    });
  }
  if (size > MAX_CONFIG_BYTES) {
    throw new ConfigError(
      `cannot read the config file ${file}: it is ${formatBytes(size)}, over the limit of ${formatBytes(MAX_CONFIG_BYTES)} for a config file`,
      { hint: LIMIT_HINT },
    );
  }
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${file}: ${(error as Error).message}`, {
      hint: 'Check the path given to --config.',
      cause: error,
    });
  }
}

/**
 * The deepest nesting of flow collections ([ ] and { }) outside quotes and comments. Brackets
 * inside plain scalars count too, which can only overstate the depth.
 */
function flowDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let quote: '"' | "'" | null = null;
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    if (quote !== null) {
      if (quote === '"' && character === '\\') index++;
      else if (character === quote) quote = null;
      continue;
    }
    if (character === '"' || character === "'") {
      quote = character;
    } else if (character === '#' && (index === 0 || /\s/.test(text[index - 1]))) {
      const end = text.indexOf('\n', index);
      index = end < 0 ? text.length : end;
    } else if (character === '[' || character === '{') {
      deepest = Math.max(deepest, ++depth);
    } else if ((character === ']' || character === '}') && depth > 0) {
      depth--;
    }
  }
  return deepest;
}

/** Parses YAML text (YAML 1.2: unique keys, no tabs as indentation) into plain values. */
export function parseYaml(text: string, source: string): unknown {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_CONFIG_BYTES) {
    throw new ConfigError(
      `cannot parse ${source}: it is ${formatBytes(bytes)}, over the limit of ${formatBytes(MAX_CONFIG_BYTES)} for a config file`,
      { hint: LIMIT_HINT },
    );
  }
  const depth = flowDepth(text);
  if (depth > MAX_FLOW_DEPTH) {
    throw new ConfigError(
      `cannot parse ${source}: its [ ] / { } collections are nested ${depth} deep, over the limit of ${MAX_FLOW_DEPTH}`,
      { hint: LIMIT_HINT },
    );
  }
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
  try {
    return document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    // yaml throws a ReferenceError when expanding the aliases would exceed maxAliasCount.
    throw new ConfigError(
      `cannot parse ${source}: its aliases (*name) expand to more than the limit of ${MAX_ALIAS_COUNT} nodes (${(error as Error).message})`,
      {
        hint: 'Anchors and aliases may repeat a value a few times; a document that multiplies them (a "billion laughs" file) is refused.',
        cause: error,
      },
    );
  }
}
