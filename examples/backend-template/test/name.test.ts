// The backend's name lives in one constant: the plugin, the backend it creates, its device ids and
// its messages all carry it, so renaming the backend (README, step 2) is a one-line change.
import { createBackend } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { BACKEND_NAME, plugin } from '../src/index.js';

describe('the backend name', () => {
  it("is the plugin's, the created backend's and every device id's", async () => {
    expect(plugin.name).toBe(BACKEND_NAME);
    const probe = await plugin.probe();
    for (const device of probe.devices) expect(device.id.split(':')[0]).toBe(BACKEND_NAME);
    // createBackend is what kiln's registry runs: it refuses a backend named differently from its plugin.
    const backend = await createBackend(plugin);
    expect(backend.name).toBe(BACKEND_NAME);
    expect(backend.capabilities.device.id).toBe(`${BACKEND_NAME}:0`);
    await expect(Promise.resolve().then(() => plugin.create({ deviceIndex: 1 }))).rejects.toThrow(
      `${BACKEND_NAME} backend: device index 1 does not exist (1 device: ${BACKEND_NAME}:0)`,
    );
  });
});
