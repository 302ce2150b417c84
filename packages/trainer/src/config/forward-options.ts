/**
 * How the model runs, derived from the (adapted) config. `device.checkpointActivations` is
 * optional in DeviceConfig: a config built elsewhere without it means "off".
 */
import type { DType } from '@kiln/core';
import type { DeviceConfig, ForwardOptions, TrainConfig } from '../contracts.js';

/** DeviceConfig with the activation-checkpointing switch always present (what loadTrainConfig returns). */
export interface DeviceSettings extends DeviceConfig {
  /** Recompute each block in backward instead of keeping its activations (default false). */
  checkpointActivations: boolean;
}

/** True when the config asks for activation checkpointing. */
export function checkpointActivationsOf(config: TrainConfig): boolean {
  return config.device.checkpointActivations === true;
}

/** The compute dtype of a precision setting ('auto' before adaptation means f32). */
export function computeDTypeOf(precision: DeviceConfig['precision']): DType {
  return precision === 'auto' ? 'f32' : precision;
}

/** The forward options of a config; run adaptConfigToBackend first so 'auto' values are resolved ('auto' attention reads as naive). */
export function forwardOptionsFor(config: TrainConfig): ForwardOptions {
  return {
    attention: config.device.attention === 'flash' ? 'flash' : 'naive',
    checkpointActivations: checkpointActivationsOf(config),
    computeDType: computeDTypeOf(config.device.precision),
  };
}
