/** kiln.schema.json (shipped in this package for editors) is generated from the zod schema that validates configs. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultTrainConfig } from '@kiln/trainer';
import { describe, expect, it } from 'vitest';
import { renderConfigSchema } from '../src/config-schema.js';

const file = fileURLToPath(new URL('../kiln.schema.json', import.meta.url));
const reference = readFileSync(fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url)), 'utf8');
const manifest = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as {
  files: string[];
};

interface ObjectSchema {
  properties: Record<string, ObjectSchema & { type?: string; enum?: string[]; description?: string }>;
  additionalProperties?: boolean;
}

describe('kiln.schema.json', () => {
  it('is up to date with the config schema (regenerate: pnpm --filter @kiln/cli schema)', () => {
    expect(readFileSync(file, 'utf8')).toBe(`${JSON.stringify(renderConfigSchema(reference), null, 2)}\n`);
    expect(manifest.files).toContain('kiln.schema.json');
  });

  it('describes every section and key of a config, and refuses unknown keys as kiln does', () => {
    const schema = JSON.parse(readFileSync(file, 'utf8')) as ObjectSchema & { $schema: string };
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.additionalProperties).toBe(false);
    const defaults = defaultTrainConfig() as unknown as Record<string, unknown>;
    for (const [section, value] of Object.entries(defaults)) {
      expect(schema.properties, section).toHaveProperty(section);
      if (typeof value !== 'object' || value === null) continue;
      const sectionSchema = schema.properties[section];
      expect(sectionSchema.additionalProperties, section).toBe(false);
      for (const key of Object.keys(value)) expect(sectionSchema.properties, `${section}.${key}`).toHaveProperty(key);
    }
    expect(schema.properties.device.properties.precision.enum).toEqual(['auto', 'f32', 'bf16', 'f16']);
    expect(schema.properties.model.properties.preset.enum).toContain('tiny');
    // Hover text is the reference's sentence, with the default.
    expect(schema.properties.device.properties.device.description).toMatch(
      /^The backend: auto \(highest-priority available\), cpu, cuda, .* Default: "auto"\.$/,
    );
    expect(schema.properties.seed.description).toMatch(/Default: 1337\.$/);
  });
});
