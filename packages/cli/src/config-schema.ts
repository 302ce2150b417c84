/**
 * kiln.schema.json, the JSON Schema of a kiln.yaml config that this package ships for editors:
 * the trainer's schema (generated from the zod schema kiln validates with), with each key's
 * description and default taken from docs/configuration.md's tables, so an editor's hover text is
 * the reference's own sentence.
 */
import { trainConfigJsonSchema } from '@kiln/trainer';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  description?: string;
  [key: string]: unknown;
}

/** The schema with descriptions from `reference` (the text of docs/configuration.md): rows `| \`path\` | default | meaning |`. */
export function renderConfigSchema(reference: string): Record<string, unknown> {
  const schema = trainConfigJsonSchema() as SchemaNode;
  for (const match of reference.matchAll(/^\| `([\w.]+)` \| ([^|]*) \| (.*) \|$/gm)) {
    const [, path, defaultCell, meaning] = match;
    let node: SchemaNode | undefined = schema;
    for (const key of path.split('.')) node = node?.properties?.[key];
    if (node === undefined) continue;
    const plain = meaning.replace(/`/g, '').trim();
    const fallback = defaultCell.trim();
    node.description = fallback === '—' || fallback === '' ? plain : `${plain} Default: ${fallback.replace(/`/g, '')}.`;
  }
  return schema;
}
