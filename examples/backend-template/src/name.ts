/**
 * The backend's name: what users pass to `--device` and KILN_DEVICE, the plugin's name, every
 * device id's prefix and the subject of its messages. Renaming the backend is changing this one
 * line (kiln checks that the plugin and the backends it creates agree).
 */
export const BACKEND_NAME = 'example';
