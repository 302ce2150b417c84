/**
 * @kiln/core/internal — core internals that the conformance kit (`@kiln/testing`) and backend
 * authors build on: the element count of a shape and the settling of pending device index checks.
 * No semver guarantee: a minor release may change or remove any of them. Applications import `@kiln/core`.
 */
export { elementCount } from '../backend/compositions/helpers.js';
export { settleIndexChecks } from '../backend/index-checks.js';
