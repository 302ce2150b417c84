/**
 * `@kiln/trainer/testing`: the Hugging Face reference fixtures measured on any backend (the
 * ground truth the trainer's tests, the backends' simulator tests and the CUDA gpu-check share).
 */
export { HF_FIXTURE_BOUNDS, HF_MODEL_FIXTURES, hfFixtureFailures, measureHfFixture } from './hf-reference.js';
export type { FixtureMeasurement, HfFixtureName, MeasureHfFixtureOptions } from './hf-reference.js';
