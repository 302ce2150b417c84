/** The whole conformance corpus for one backend, in a stable order. */
import { resolveTolerances } from '../tolerances.js';
import { argumentErrorCases } from './argument-errors.js';
import type { BackendFacts, CaseSettings } from './case-builder.js';
import { optimizerCases } from './cases/adamw-cases.js';
import { attentionCases } from './cases/attention-cases.js';
import { causalAttentionCases } from './cases/attention-causal-cases.js';
import { binaryCases } from './cases/binary-cases.js';
import { conversionCases } from './cases/conversion-cases.js';
import { crossEntropyOpCases } from './cases/cross-entropy-op-cases.js';
import { gradientCases } from './cases/gradient-cases.js';
import { indexRangeCases } from './cases/index-range-cases.js';
import { matmulCases } from './cases/matmul-cases.js';
import { memoryCases } from './cases/memory-cases.js';
import { mixedPrecisionNormCases } from './cases/mixed-precision-norm-cases.js';
import { multiTensorCases } from './cases/multi-tensor-cases.js';
import { nonFiniteCases } from './cases/non-finite-cases.js';
import { normalizationCases } from './cases/norm-cases.js';
import { opCases } from './cases/op-cases.js';
import { reduceCases } from './cases/reduce-cases.js';
import { softmaxCases } from './cases/softmax-cases.js';
import { unaryCases } from './cases/unary-cases.js';
import type { ConformanceCase, ConformanceOptions } from './types.js';

/** Default seed of the input streams. */
export const DEFAULT_CONFORMANCE_SEED = 20240917;

/** Options of buildConformanceCases: the shared options plus the backend the cases are for. */
export interface BuildConformanceOptions extends ConformanceOptions {
  /** The backend under test (its capabilities decide native, composed and skipped cases). */
  backend: BackendFacts;
}

const FAMILIES: ((settings: CaseSettings) => ConformanceCase[])[] = [
  unaryCases,
  binaryCases,
  reduceCases,
  matmulCases,
  memoryCases,
  indexRangeCases,
  conversionCases,
  softmaxCases,
  normalizationCases,
  mixedPrecisionNormCases,
  attentionCases,
  causalAttentionCases,
  optimizerCases,
  multiTensorCases,
  nonFiniteCases,
  gradientCases,
  argumentErrorCases,
  opCases,
  crossEntropyOpCases,
];

/** Every case for `options.backend`: primitives, declared fused kernels (or their composed fallbacks), gradients, NaN/Inf, argument errors. */
export function buildConformanceCases(options: BuildConformanceOptions): ConformanceCase[] {
  const settings: CaseSettings = {
    backend: options.backend,
    tolerances: resolveTolerances(options.tolerance),
    seed: options.seed ?? DEFAULT_CONFORMANCE_SEED,
    sizes: options.sizes ?? 'full',
  };
  const wanted = options.kernels ? new Set(options.kernels) : undefined;
  const skips = Object.entries(options.skip ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const seen = new Set<string>();
  const cases: ConformanceCase[] = [];
  for (const family of FAMILIES) {
    for (const item of family(settings)) {
      if (wanted && !wanted.has(item.kernel)) continue;
      if (seen.has(item.id)) throw new Error(`conformance kit bug: duplicate case id '${item.id}'`);
      seen.add(item.id);
      const skip = skips.find(([prefix]) => item.id.startsWith(prefix));
      cases.push(skip && item.skipReason === undefined ? { ...item, skipReason: skip[1] } : item);
    }
  }
  return cases;
}
