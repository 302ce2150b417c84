/** Checks a set of named tensors against the Hugging Face layout (kiln's [out, in] shapes) a config implies. */
import { formatShape, InvalidArgumentError, type Tensor } from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import { parameterSpecs } from './config.js';

/** What was wrong with a set of parameters: names missing, names unexpected, shapes that differ. */
export interface ParameterMismatch {
  /** Expected names that are absent. */
  missing: string[];
  /** Present names the layout does not have. */
  unexpected: string[];
  /** `name: expected [..], got [..]` for each shape that differs. */
  wrongShapes: string[];
}

/** Compares names and shapes with the layout of `config`; null when they match. */
export function findParameterMismatch(
  config: ModelConfig,
  shapes: Map<string, readonly number[]>,
): ParameterMismatch | null {
  const specs = parameterSpecs(config);
  const expected = new Set(specs.map((spec) => spec.name));
  const missing = specs.filter((spec) => !shapes.has(spec.name)).map((spec) => spec.name);
  const unexpected = [...shapes.keys()].filter((name) => !expected.has(name));
  const wrongShapes: string[] = [];
  for (const spec of specs) {
    const shape = shapes.get(spec.name);
    if (shape && (shape.length !== spec.shape.length || shape.some((size, axis) => size !== spec.shape[axis]))) {
      wrongShapes.push(`${spec.name}: expected ${formatShape(spec.shape)}, got ${formatShape(shape)}`);
    }
  }
  return missing.length + unexpected.length + wrongShapes.length === 0 ? null : { missing, unexpected, wrongShapes };
}

/** One readable paragraph listing every mismatch. */
export function describeParameterMismatch(mismatch: ParameterMismatch): string {
  const lines: string[] = [];
  const list = (names: string[]): string =>
    names.length > 8 ? `${names.slice(0, 8).join(', ')}, … (${names.length} in all)` : names.join(', ');
  if (mismatch.missing.length > 0) lines.push(`missing: ${list(mismatch.missing)}`);
  if (mismatch.unexpected.length > 0) lines.push(`unexpected: ${list(mismatch.unexpected)}`);
  if (mismatch.wrongShapes.length > 0) lines.push(`wrong shapes: ${list(mismatch.wrongShapes)}`);
  return lines.join('; ');
}

/** Throws InvalidArgumentError unless the parameters are exactly the layout's, f32, on one backend. */
export function checkParameters(config: ModelConfig, parameters: Map<string, Tensor>): void {
  const mismatch = findParameterMismatch(
    config,
    new Map([...parameters].map(([name, tensor]) => [name, tensor.shape])),
  );
  if (mismatch) {
    throw new InvalidArgumentError(
      `LlamaModel: the parameters do not match the config: ${describeParameterMismatch(mismatch)}`,
      {
        hint: 'Create models with createLlamaModel or loadModelDirectory, which build the Hugging Face layout of the family.',
      },
    );
  }
  const backend = parameters.values().next().value!.backend;
  for (const [name, tensor] of parameters) {
    if (tensor.dtype !== 'f32' || tensor.backend !== backend) {
      throw new InvalidArgumentError(
        `LlamaModel: parameter ${name} is ${tensor.toString()}; every parameter must be f32 on '${backend.name}'`,
        {
          hint: 'Master weights are f32 on one backend; cast and move them before building the model.',
        },
      );
    }
  }
}
