/**
 * The table of supported families and config options in docs/fine-tuning.md, rendered from the
 * registry so the documentation cannot drift from the code (a test compares them; regenerate with
 * `pnpm --filter @kiln/trainer docs`).
 */
import { modelFamilies } from './registry.js';

/** Markers around the generated table in docs/fine-tuning.md. */
export const SUPPORT_TABLE_MARKERS = [
  '<!-- families:begin (generated: pnpm --filter @kiln/trainer docs) -->',
  '<!-- families:end -->',
] as const;

/** The Markdown tables of every family: what it covers, LoRA targets, each option and what kiln does with it. */
export function renderFamilySupportTable(): string {
  const lines = ['| `model_type` | transformers class | examples | LoRA targets |', '|---|---|---|---|'];
  for (const family of modelFamilies()) {
    lines.push(
      `| \`${family.modelType}\` | \`${family.architectureClass}\` | ${family.documentation.examples} | ${family.linearModuleNames.map((name) => `\`${name}\``).join(', ')}, \`all-linear\` |`,
    );
  }
  for (const family of modelFamilies()) {
    lines.push('', `**\`${family.modelType}\` options**`, '', '| config.json key | kiln |', '|---|---|');
    for (const [key, support] of family.documentation.options) lines.push(`| \`${key}\` | ${support} |`);
  }
  return `${lines.join('\n')}\n`;
}
