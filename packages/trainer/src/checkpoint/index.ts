/** Atomic training checkpoints: weights (Hugging Face layout), AdamW moments and resume state. */
export { saveCheckpoint, type CheckpointContents, type SaveCheckpointOptions } from './save.js';
export {
  cleanTemporaryCheckpoints, findLatestCheckpoint, listCheckpoints, loadCheckpoint, readCheckpointState, verifyCheckpoint,
  type FindCheckpointOptions, type LoadedCheckpoint,
} from './load.js';
export { CHECKPOINT_FORMAT_VERSION, KILN_VERSION, parseCheckpointState, type CheckpointMetrics, type CheckpointState } from './state.js';
export { checkpointName, checkpointsDirectory, LATEST_FILE, OPTIMIZER_FILE, STATE_FILE } from './layout.js';
