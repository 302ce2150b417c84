/** LoRA: adapters on any family's linear modules, PEFT's directory format, merging. */
export { createLoraAdapter, LoraAdapter, mergeLoraAdapter, peftKey } from './adapter.js';
export {
  checkLoraConfig,
  LORA_BASE_DTYPES,
  parseLoraOption,
  targetModulePaths,
  type LoraBaseDType,
  type LoraConfig,
} from './lora-config.js';
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  loadLoraAdapter,
  saveLoraAdapter,
  type SaveAdapterOptions,
} from './peft-format.js';
export {
  isLoraTrainingModel,
  loadLoraTrainingModel,
  LoraTrainingModel,
  type LoraTrainingSource,
} from './training-model.js';
