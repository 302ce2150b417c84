/**
 * The registry entry of a native (GPU addon) backend, written once: probe() as the backend's own,
 * and create() that refuses with probe()'s reason (instead of the driver error of the first native
 * call) and checks the options every native backend takes (deviceIndex, memoryLimitBytes) before
 * handing them to the backend's constructor.
 */
import {
  BackendUnavailableError,
  InvalidArgumentError,
  KERNEL_API_VERSION,
  type BackendCreateOptions,
  type BackendPlugin,
  type KernelBackend,
  type ProbeResult,
} from '../index.js';

/** The create() options every native backend takes, checked. */
export interface NativeDeviceOptions {
  /** Which device (default: the backend's, 0). */
  deviceIndex?: number;
  /** Cap on the backend's device memory in bytes (default: the backend's). */
  memoryLimitBytes?: number;
}

/** What nativeBackendPlugin needs to know about one backend. */
export interface NativeBackendPluginSpec {
  /** Registry name and message prefix ('cuda' → "cuda backend: …"). */
  name: string;
  /** Display name in the unavailable error ('CUDA' → "The CUDA backend cannot run here."). */
  displayName: string;
  /** Registry priority (cuda 300, metal 200). */
  priority: number;
  /** The backend's probe(); never throws. */
  probe(): ProbeResult;
  /** The hint of the error create() throws when probe() says unavailable. */
  unavailableHint: string;
  /** Makes the backend once probe() said it can run: `device` checked, `options` as the caller passed them. */
  create(device: NativeDeviceOptions, options: BackendCreateOptions | undefined): KernelBackend;
}

/** options[name] when it is a number, undefined when absent; anything else is an InvalidArgumentError. */
function optionalNumber(
  backend: string,
  options: BackendCreateOptions | undefined,
  name: keyof NativeDeviceOptions,
): number | undefined {
  const value = options?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') {
    throw new InvalidArgumentError(`${backend} backend: ${name} must be a number, got ${typeof value}`, {
      hint: `Pass e.g. { ${name}: 0 }.`,
    });
  }
  return value;
}

/** The BackendPlugin of a native backend described by `spec`. */
export function nativeBackendPlugin(spec: NativeBackendPluginSpec): BackendPlugin {
  return {
    name: spec.name,
    apiVersion: KERNEL_API_VERSION,
    priority: spec.priority,
    probe: () => spec.probe(),
    create(options?: BackendCreateOptions) {
      const probe = spec.probe();
      if (!probe.available) {
        throw new BackendUnavailableError(
          `The ${spec.displayName} backend cannot run here.`,
          [{ name: spec.name, reason: probe.reason ?? 'unavailable' }],
          { hint: spec.unavailableHint },
        );
      }
      const device: NativeDeviceOptions = {
        deviceIndex: optionalNumber(spec.name, options, 'deviceIndex'),
        memoryLimitBytes: optionalNumber(spec.name, options, 'memoryLimitBytes'),
      };
      return spec.create(device, options);
    },
  };
}
