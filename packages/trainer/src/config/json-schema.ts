/**
 * The JSON Schema of a kiln.yaml training config, generated from the zod schema that validates it
 * (so the two cannot drift): editors with YAML language support complete and check config files
 * with it. The CLI package ships it as `@kiln/cli/kiln.schema.json`.
 */
import { z } from 'zod';
import { partialTrainConfigSchema } from './schema.js';

/** Where the schema is published (the `$id`), and what a config file names in its modeline. */
export const TRAIN_CONFIG_SCHEMA_ID = 'https://unpkg.com/@kiln/cli/kiln.schema.json';

/** The JSON Schema (draft 2020-12) of one config file: every key optional, unknown keys refused, types and ranges as the loader checks them. */
export function trainConfigJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(partialTrainConfigSchema, { io: 'input', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    $id: TRAIN_CONFIG_SCHEMA_ID,
    title: 'kiln training config (kiln.yaml)',
    description:
      'A kiln train --config file. Cross-field rules (batch divisibility, head sizes, warmup ≤ steps) are checked when kiln loads it; see docs/configuration.md.',
    ...rest,
  };
}
