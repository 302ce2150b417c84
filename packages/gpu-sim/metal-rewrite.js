// The rewrite step that lets g++ compile a `.metal` compute kernel against gpu_sim's
// `metal_stdlib` shim. It never edits the sources: it writes rewritten copies (same line numbers,
// `#line` pointing at the original) into a build directory. What it changes:
//
//  1. `[[...]]` attributes are commented out (C++ would reject or ignore MSL's).
//  2. A function-scope `threadgroup T name[N]...;` becomes `auto& name = GPU_SIM_THREADGROUP(T[N]...);`:
//     storage shared by the threadgroup (one copy per engine worker, 0xFF-filled per threadgroup).
//  3. A program-scope `constant T name [[function_constant(i)]];` (i a number or a macro) becomes
//     `GPU_SIM_FUNCTION_CONSTANT(T, name, i);`, a value the host sets per dispatch.
//  4. After the source it appends, for every kernel, bindings that fetch each parameter from the
//     dispatch's argument table — `[[buffer(n)]]`, `[[threadgroup(n)]]` or a builtin such as
//     `[[thread_position_in_grid]]` — call the kernel, and register it under its host name.
//     Kernels are `kernel void name(...)`, or templates instantiated as
//     `template [[host_name("name_f32")]] kernel decltype(name<float>) name<float>;`.
//
// Anything it cannot bind (an unknown attribute, a parameter without one) is an error naming the
// file, line and parameter.

const BUILTINS = new Map([
  ['thread_position_in_grid', 'kThreadPositionInGrid'],
  ['thread_position_in_threadgroup', 'kThreadPositionInThreadgroup'],
  ['threadgroup_position_in_grid', 'kThreadgroupPositionInGrid'],
  ['threads_per_grid', 'kThreadsPerGrid'],
  ['threads_per_threadgroup', 'kThreadsPerThreadgroup'],
  ['threadgroups_per_grid', 'kThreadgroupsPerGrid'],
  ['thread_index_in_threadgroup', 'kThreadIndexInThreadgroup'],
  ['thread_index_in_simdgroup', 'kThreadIndexInSimdgroup'],
  ['simdgroup_index_in_threadgroup', 'kSimdgroupIndexInThreadgroup'],
  ['threads_per_simdgroup', 'kThreadsPerSimdgroup'],
  ['thread_execution_width', 'kThreadsPerSimdgroup'],
  ['simdgroups_per_threadgroup', 'kSimdgroupsPerThreadgroup'],
]);

/** An error in a .metal file, with its location. */
export class MetalRewriteError extends Error {}

/** The text with comments and string/char literals blanked (same length and line breaks), for pattern matching. */
function maskComments(text) {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const two = text.slice(i, i + 2);
    if (two === '//') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      out += ' '.repeat(stop - i);
      i = stop;
    } else if (two === '/*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (text[i] === '"' || text[i] === "'") {
      const quote = text[i];
      let j = i + 1;
      while (j < text.length && text[j] !== quote) j += text[j] === '\\' ? 2 : 1;
      // Keep the quotes and blank the contents (host_name("…") still matches structurally).
      out += quote + text.slice(i + 1, j).replace(/[^\n]/g, '_') + (j < text.length ? quote : '');
      i = j + 1;
    } else {
      out += text[i];
      i++;
    }
  }
  return out;
}

function lineOf(text, index) {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Index just past the bracket matching the opening one at `open` (in masked text). */
function matchBracket(masked, open, opening, closing) {
  let depth = 0;
  for (let i = open; i < masked.length; i++) {
    if (masked[i] === opening) depth++;
    else if (masked[i] === closing && --depth === 0) return i + 1;
  }
  return -1;
}

/** Splits a parameter list at top-level commas. */
function splitTopLevel(text) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '<' || c === '[') depth++;
    else if (c === ')' || c === '>' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (text.slice(start).trim() !== '') parts.push(text.slice(start));
  return parts.map((part) => part.trim()).filter((part) => part !== '');
}

/** One kernel parameter: its declared type, name and binding. */
function parseParameter(text, where) {
  const attribute = /\[\[\s*([\w]+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]/.exec(text);
  const declaration = text.replace(/\[\[[\s\S]*?\]\]/g, '').trim();
  const name = /(\w+)\s*$/.exec(declaration);
  if (!name) throw new MetalRewriteError(`${where}: cannot read the parameter '${text}'`);
  const type = declaration.slice(0, name.index).trim();
  if (!attribute)
    throw new MetalRewriteError(
      `${where}: parameter '${name[1]}' has no [[buffer(n)]], [[threadgroup(n)]] or builtin attribute`,
    );
  const [, kind, index] = attribute;
  if (kind === 'buffer') return { type, name: name[1], expression: `table.argument<${type}>(${index}, "${name[1]}")` };
  if (kind === 'threadgroup')
    return { type, name: name[1], expression: `table.threadgroup<${type}>(${index}, "${name[1]}")` };
  const builtin = BUILTINS.get(kind);
  if (!builtin)
    throw new MetalRewriteError(
      `${where}: parameter '${name[1]}' has the attribute [[${kind}]], which the simulator cannot supply`,
    );
  return {
    type,
    name: name[1],
    expression: `::gpu_sim::metal::builtin<${type}>(::gpu_sim::metal::Builtin::${builtin})`,
  };
}

/** The names of a template parameter list ("typename T, int Op" → "T, Op"). */
function templateParameterNames(list) {
  return splitTopLevel(list)
    .map((parameter) => /(\w+)\s*(?:=.*)?$/.exec(parameter.replace(/=.*$/, '').trim())[1])
    .join(', ');
}

/**
 * Rewrites one .metal (or MSL header) source for the simulator.
 * @param {string} source the file's text
 * @param {{ path: string, displayName?: string }} options path for #line (messages and source_location), displayName for the registry
 * @returns {{ code: string, kernels: string[], functionConstants: string[] }}
 */
export function rewriteMetalSource(source, { path, displayName = path.split('/').pop() }) {
  const masked = maskComments(source);
  const where = (index) => `${displayName}:${lineOf(source, index)}`;
  const edits = [];

  // Function constants (program scope).
  const functionConstants = [];
  for (const match of masked.matchAll(
    /\bconstant\s+(\w+)\s+(\w+)\s*\[\[\s*function_constant\s*\(\s*(\w+)\s*\)\s*\]\]\s*;/g,
  )) {
    const [whole, type, name, index] = match;
    functionConstants.push(name);
    edits.push({
      start: match.index,
      end: match.index + whole.length,
      text: `GPU_SIM_FUNCTION_CONSTANT(${type}, ${name}, ${index});` + '\n'.repeat((whole.match(/\n/g) ?? []).length),
    });
  }

  // Function-scope threadgroup variables (declarations that start a statement, without * or &).
  for (const match of masked.matchAll(
    /(?<=^|[;{}])(\s*)threadgroup\s+([\w:<>, ]+?)\s+(\w+)\s*((?:\[[^\[\];]*\]\s*)*);/g,
  )) {
    const [whole, space, type, name, extents] = match;
    const before = '';
    const start = match.index + space.length;
    const dims = extents.replace(/\s+/g, '');
    const text = `auto& ${name} = GPU_SIM_THREADGROUP(${type.trim()}${dims});`;
    const original = whole.slice(before.length + space.length);
    edits.push({ start, end: start + original.length, text: text + '\n'.repeat((original.match(/\n/g) ?? []).length) });
  }

  // Kernels: plain ones, and templates with their host_name instantiations.
  const bindings = [];
  const kernels = [];
  const templates = new Map();
  for (const match of masked.matchAll(/(template\s*<([^<>]*)>\s*)?\bkernel\s+void\s+(\w+)\s*\(/g)) {
    const open = match.index + match[0].length - 1;
    const close = matchBracket(masked, open, '(', ')');
    if (close < 0)
      throw new MetalRewriteError(`${where(match.index)}: unbalanced parameter list of kernel '${match[3]}'`);
    const parameters = splitTopLevel(masked.slice(open + 1, close - 1)).map((text) =>
      parseParameter(text, `${where(match.index)}: kernel '${match[3]}'`),
    );
    if (match[1]) templates.set(match[3], { list: match[2], parameters });
    else {
      kernels.push(match[3]);
      bindings.push({
        host: match[3],
        body: `kiln_sim_body_${match[3]}`,
        definition: `void kiln_sim_body_${match[3]}(const ::gpu_sim::metal::ArgumentTable& table) {\n  ${match[3]}(${parameters.map((p) => p.expression).join(', ')});\n}`,
      });
    }
  }
  const defined = new Set();
  for (const match of masked.matchAll(
    /template\s*\[\[\s*host_name\s*\(\s*"[^"]*"\s*\)\s*\]\]\s*kernel\s+decltype\s*\(\s*(\w+)\s*</g,
  )) {
    const host = /host_name\s*\(\s*"([^"]*)"/.exec(source.slice(match.index, match.index + match[0].length))[1];
    const name = match[1];
    const open = match.index + match[0].length - 1;
    const close = matchBracket(masked, open, '<', '>');
    const args = source.slice(open + 1, close - 1).trim();
    const kernel = templates.get(name);
    if (!kernel)
      throw new MetalRewriteError(
        `${where(match.index)}: '${host}' instantiates '${name}', which is not a template kernel of this file`,
      );
    if (!defined.has(name)) {
      defined.add(name);
      bindings.push({
        definition: `template <${kernel.list}>\nvoid kiln_sim_body_${name}(const ::gpu_sim::metal::ArgumentTable& table) {\n  ${name}<${templateParameterNames(kernel.list)}>(${kernel.parameters.map((p) => p.expression).join(', ')});\n}`,
      });
    }
    kernels.push(host);
    bindings.push({ host, body: `kiln_sim_body_${name}<${args}>` });
  }

  // Attributes: comment out what is left.
  for (const match of masked.matchAll(/\[\[[\s\S]*?\]\]/g)) {
    if (edits.some((edit) => match.index >= edit.start && match.index < edit.end)) continue;
    edits.push({
      start: match.index,
      end: match.index + match[0].length,
      text: `/*${source.slice(match.index, match.index + match[0].length)}*/`,
    });
  }

  edits.sort((a, b) => a.start - b.start);
  let code = '';
  let position = 0;
  for (const edit of edits) {
    if (edit.start < position) continue;
    code += source.slice(position, edit.start) + edit.text;
    position = edit.end;
  }
  code += source.slice(position);

  const escapedPath = path.replace(/\\/g, '/').replace(/"/g, '\\"');
  let result = `#line 1 "${escapedPath}"\n${code}`;
  if (bindings.some((binding) => binding.host)) {
    const lines = result.split('\n').length;
    result += `${result.endsWith('\n') ? '' : '\n'}#line ${lines + 1} "${escapedPath} (bindings generated by @kiln/gpu-sim)"\n`;
    result += 'namespace {\n';
    result +=
      '::gpu_sim::metal::ConstantError kiln_sim_set_constants(const ::gpu_sim::metal::ArgumentTable& table) {\n';
    result += '  (void)table;\n  ::gpu_sim::metal::ConstantError error;\n';
    for (const name of functionConstants)
      result += `  error = ::gpu_sim::metal::first_error(error, ${name}.bind(table));\n`;
    result += '  return error;\n}\n';
    for (const binding of bindings) if (binding.definition) result += `${binding.definition}\n`;
    const file = displayName.replace(/"/g, '\\"');
    result += 'const ::gpu_sim::metal::KernelInfo kiln_sim_kernels[] = {\n';
    for (const binding of bindings) {
      if (binding.host) result += `    {"${binding.host}", "${file}", &kiln_sim_set_constants, &${binding.body}},\n`;
    }
    result += '};\n';
    result +=
      'const ::gpu_sim::metal::KernelRegistrar kiln_sim_registrar(kiln_sim_kernels, sizeof kiln_sim_kernels / sizeof kiln_sim_kernels[0]);\n';
    result += '}  // namespace\n';
  }
  return { code: result, kernels, functionConstants };
}

/**
 * Rewrites every `.metal` file and MSL header (`.h`) of `inputDirectory` into `outputDirectory`:
 * `name.metal` → `name.metal.cpp`, headers keep their names (so `#include "x.h"` finds the
 * rewritten copy next to the including file). A file whose rewritten text is unchanged is not
 * written again (build tools see no change).
 * @returns {{ sources: string[], headers: string[], kernels: Record<string, string[]> }}
 */
export async function rewriteMetalDirectory(inputDirectory, outputDirectory) {
  const { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  mkdirSync(outputDirectory, { recursive: true });
  const sources = [];
  const headers = [];
  const kernels = {};
  for (const name of readdirSync(inputDirectory).sort()) {
    const isSource = name.endsWith('.metal');
    if (!isSource && !name.endsWith('.h')) continue;
    const path = join(inputDirectory, name);
    const { code, kernels: names } = rewriteMetalSource(readFileSync(path, 'utf8'), { path, displayName: name });
    const target = join(outputDirectory, isSource ? `${name}.cpp` : name);
    if (!existsSync(target) || readFileSync(target, 'utf8') !== code) writeFileSync(target, code);
    (isSource ? sources : headers).push(target);
    if (isSource) kernels[name] = names;
  }
  return { sources, headers, kernels };
}
