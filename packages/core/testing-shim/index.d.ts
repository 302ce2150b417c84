/** @deprecated @kiln/core/testing goes away in kiln 0.3: import the conformance kit from @kiln/testing (npm i -D @kiln/testing). */
export * from '@kiln/testing';
