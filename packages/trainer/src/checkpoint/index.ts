/** Atomic training checkpoints: weights (Hugging Face layout), AdamW moments and resume state, verified by their checksums. */
export { saveCheckpoint, type CheckpointContents, type SaveCheckpointOptions } from './save.js';
export {
  findLatestCheckpoint,
  listCheckpoints,
  loadCheckpoint,
  loadCheckpointModel,
  loadLatestCheckpoint,
  loadLatestModel,
  type FindCheckpointOptions,
  type LoadCheckpointModelOptions,
  type LoadCheckpointOptions,
  type LoadedCheckpoint,
} from './load.js';
export { cleanTemporaryCheckpoints, isWriterAlive } from './cleanup.js';
export {
  checkCheckpointSpace,
  checkpointBytes,
  CHECKPOINT_OVERHEAD_BYTES,
  type CheckpointSpaceRun,
} from './disk-space.js';
export {
  acquireRunLock,
  RUN_LOCK_FILE,
  type AcquireRunLockOptions,
  type RunLock,
  type RunLockHolder,
} from './run-lock.js';
export {
  CHECKPOINT_FILES,
  fileSha256,
  MODEL_FILES,
  previousCheckpoints,
  readCheckpointState,
  verifyCheckpoint,
  type VerifyCheckpointOptions,
} from './verify.js';
export {
  CHECKPOINT_FORMAT_VERSION,
  KILN_VERSION,
  parseCheckpointState,
  type CheckpointChecksums,
  type CheckpointMetrics,
  type CheckpointState,
  type FileChecksum,
} from './state.js';
export { checkpointName, checkpointsDirectory, LATEST_FILE, OPTIMIZER_FILE, STATE_FILE } from './layout.js';
