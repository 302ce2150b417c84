#!/usr/bin/env node
// Generates docs/kernel-backend.md — the reference of every type and method of the KernelBackend
// contract — from src/backend/kernel-backend.ts itself, so the doc cannot drift from the code.
//
//   node packages/core/scripts/kernel-backend-reference.mjs          writes docs/kernel-backend.md
//   node packages/core/scripts/kernel-backend-reference.mjs --check  exits 1 when it is out of date
// core's test/kernel-backend-doc.test.ts runs the check.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const SOURCE = fileURLToPath(new URL('../src/backend/kernel-backend.ts', import.meta.url));
export const DOC = fileURLToPath(new URL('../../../docs/kernel-backend.md', import.meta.url));

/** The JSDoc text of a node (comments joined into one paragraph per blank line). */
function docOf(node, sourceText) {
  const ranges = ts.getLeadingCommentRanges(sourceText, node.pos) ?? [];
  const jsdoc = ranges.filter((range) => sourceText.slice(range.pos, range.pos + 3) === '/**').at(-1);
  if (jsdoc === undefined) return '';
  return sourceText
    .slice(jsdoc.pos + 3, jsdoc.end - 2)
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

/** Source text of a node without its leading comments, on one line. */
function codeOf(node, sourceFile) {
  return node
    .getText(sourceFile)
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\s+/g, ' ')
    .replace(/;$/, '')
    .trim();
}

const escapeCell = (text) => text.replace(/\|/g, '\\|').replace(/\n+/g, ' ');

/** Markdown for one interface: a table of members (required/optional, signature, what it does). */
function interfaceSection(node, sourceFile, sourceText) {
  const lines = [`### \`${node.name.text}\``, '', docOf(node, sourceText), ''];
  const heritage = node.heritageClauses?.map((clause) => clause.getText(sourceFile)).join(' ');
  if (heritage) lines.push(`\`${node.name.text} ${heritage}\``, '');
  lines.push('| member | required | signature | what it does |', '|---|---|---|---|');
  let group = '';
  for (const member of node.members) {
    // `// ---- storage (required) ----` comments group the members of KernelBackend.
    const comments = ts.getLeadingCommentRanges(sourceText, member.pos) ?? [];
    for (const range of comments) {
      const text = sourceText.slice(range.pos, range.end);
      const heading = /^\/\/ -+ (.+?) -+$/.exec(text.trim());
      if (heading !== null) group = heading[1];
    }
    const name = member.name?.getText(sourceFile) ?? (ts.isIndexSignatureDeclaration(member) ? '[key: string]' : '?');
    const optional = member.questionToken !== undefined || /^Optional/.test(docOf(member, sourceText));
    const required = optional ? 'optional' : 'required';
    const signature = codeOf(member, sourceFile);
    lines.push(
      `| \`${name}\`${group ? ` (${group})` : ''} | ${required} | \`${escapeCell(signature)}\` | ${escapeCell(docOf(member, sourceText))} |`,
    );
  }
  lines.push('');
  return lines;
}

/** The whole reference, as Markdown. */
export function renderKernelBackendReference(sourceText = readFileSync(SOURCE, 'utf8')) {
  const sourceFile = ts.createSourceFile('kernel-backend.ts', sourceText, ts.ScriptTarget.ES2022, true);
  const header =
    /^\/\*\*([\s\S]*?)\*\//
      .exec(sourceText)?.[1]
      .split('\n')
      .map((line) => line.replace(/^\s*\* ?/, ''))
      .join('\n')
      .trim() ?? '';
  const lines = [
    '# The KernelBackend contract (reference)',
    '',
    '<!-- Generated from packages/core/src/backend/kernel-backend.ts by packages/core/scripts/kernel-backend-reference.mjs. Do not edit: change the source and run the script. A test fails when this file is out of date. -->',
    '',
    'Every type, constant and method a backend package deals with, exactly as `@kiln/core` declares',
    "them (`import type { KernelBackend, BackendPlugin, … } from '@kiln/core'`). The guide is",
    '[writing-a-backend.md](writing-a-backend.md); what each kernel computes is',
    '[kernel-semantics.md](kernel-semantics.md).',
    '',
    '## Layout rules',
    '',
    header,
    '',
    '## Constants and type aliases',
    '',
    '| name | definition | what it is |',
    '|---|---|---|',
  ];
  const interfaces = [];
  for (const statement of sourceFile.statements) {
    if (ts.isInterfaceDeclaration(statement)) interfaces.push(statement);
    else if (ts.isTypeAliasDeclaration(statement)) {
      lines.push(
        `| \`${statement.name.text}\` | \`${escapeCell(codeOf(statement.type, sourceFile))}\` | ${escapeCell(docOf(statement, sourceText))} |`,
      );
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        lines.push(
          `| \`${declaration.name.getText(sourceFile)}\` | \`${escapeCell(codeOf(declaration.initializer, sourceFile))}\` | ${escapeCell(docOf(statement, sourceText))} |`,
        );
      }
    }
  }
  lines.push('', '## Interfaces', '');
  for (const node of interfaces) lines.push(...interfaceSection(node, sourceFile, sourceText));
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rendered = renderKernelBackendReference();
  if (process.argv.includes('--check')) {
    const current = readFileSync(DOC, 'utf8');
    if (current !== rendered) {
      console.error(
        'docs/kernel-backend.md is out of date: run node packages/core/scripts/kernel-backend-reference.mjs',
      );
      process.exit(1);
    }
  } else {
    writeFileSync(DOC, rendered);
    console.log(`wrote ${DOC}`);
  }
}
