/**
 * @kiln/testing — the conformance kit: a float64 reference backend, the case corpus every
 * backend must pass (runConformance programmatically, describeBackendConformance under vitest),
 * per-dtype tolerances, gradcheck and the support matrix.
 */
export {
  describeBackendConformance,
  type DescribeConformanceOptions,
} from './conformance/describe-backend-conformance.js';
export {
  buildConformanceCases,
  DEFAULT_CONFORMANCE_SEED,
  type BuildConformanceOptions,
} from './conformance/build-conformance-cases.js';
export { runConformance, type RunConformanceOptions } from './conformance/run-conformance.js';
export type {
  ConformanceCase,
  ConformanceOptions,
  ConformanceReport,
  ConformanceResult,
  ConformanceSizes,
} from './conformance/types.js';
export {
  KilnConformanceError,
  ConformanceSkipSignal,
  type ConformanceMismatch,
} from './conformance/conformance-error.js';
export { KERNEL_DTYPES } from './conformance/kernel-dtypes.js';
export {
  gradcheck,
  DEFAULT_GRADCHECK_TOLERANCE,
  type GradcheckOptions,
  type GradcheckResult,
  type GradcheckWorst,
} from './gradcheck.js';
export {
  DEFAULT_TOLERANCES,
  EXACT_TOLERANCE,
  relativeL2Error,
  withinTolerance,
  type Tolerance,
  type ToleranceTable,
} from './tolerances.js';
export { supportMatrix, formatSupportMatrix, type SupportMatrixRow, type SupportStatus } from './support-matrix.js';
export {
  createReferenceBackend,
  type ReferenceBackend,
  type ReferenceBackendOptions,
  type TransferCounters,
} from './reference-backend.js';
