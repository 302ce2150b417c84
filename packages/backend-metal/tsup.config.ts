// The build every GPU backend shares: @kiln/native-host's tsup.backend.ts.
export { default } from '../native-host/tsup.backend.js';
