/**
 * Discovery: find installed backend packages and register them, so users never import a backend
 * by name. Looks for the first-party packages, any `kiln-backend-*` or `@<scope>/kiln-backend-*`
 * in the node_modules directories above the start directories, and every name or path listed in
 * KILN_BACKENDS. Each package is imported from the file its package.json points to, so this works
 * from the ESM and the CJS build alike. Nothing here throws: every outcome is a report entry.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { KilnError } from '../errors.js';
import type { BackendPlugin } from './kernel-backend.js';
import { getBackendPlugin, registerBackend } from './registry.js';

/** What happened to one package during discovery. */
export interface DiscoveredPackage {
  /** Package name, or the path as given in KILN_BACKENDS / options.packages. */
  name: string;
  /** True when its plugin is registered. */
  loaded: boolean;
  /** Why it was not loaded (a sentence). */
  reason?: string;
  /** Where it was found on disk. */
  path?: string;
  /** The backend name its plugin registered (or would have: also set when registration rejected it). */
  backend?: string;
  /** The KernelBackend API version its plugin declares, when registration rejected it for that. */
  apiVersion?: number;
}

/** Every package discovery considered, in the order considered. */
export type DiscoveryReport = DiscoveredPackage[];

/** Options of discoverBackends. */
export interface DiscoverBackendsOptions {
  /** Start directories whose node_modules (and their ancestors') are searched. Default: process.cwd() and @kiln/core's own location. */
  paths?: string[];
  /** Extra package names or paths to load, like KILN_BACKENDS entries. */
  packages?: string[];
  /** Search again instead of returning the memoized report of the first run. */
  refresh?: boolean;
  /** Environment to read KILN_BACKENDS from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** The first-party backend packages, looked up by name. */
export const FIRST_PARTY_BACKENDS: readonly string[] = [
  '@kiln/backend-cuda',
  '@kiln/backend-metal',
  '@kiln/backend-cpu',
];

const PACKAGE_PREFIX = 'kiln-backend-';
const PACKAGE_NAME = /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i;
const ACTIVE_CONDITIONS = new Set(['node', 'import', 'default', 'node-addons']);

let memoized: Promise<DiscoveryReport> | undefined;

/** Find, import and register installed backends; runs once per process unless `refresh` is set. Never throws. */
export function discoverBackends(options: DiscoverBackendsOptions = {}): Promise<DiscoveryReport> {
  if (memoized === undefined || options.refresh === true) memoized = runDiscovery(options);
  return memoized;
}

interface Candidate {
  name: string;
  /** Package directory or module file; undefined when not found. */
  location: string | undefined;
  missingReason: string;
}

async function runDiscovery(options: DiscoverBackendsOptions): Promise<DiscoveryReport> {
  const env = options.env ?? process.env;
  const starts = options.paths ?? defaultStartDirectories();
  const directories = nodeModulesDirectories(starts.map((start) => resolve(start)));
  const candidates = new Map<string, Candidate>();
  const add = (candidate: Candidate): void => {
    if (!candidates.has(candidate.name)) candidates.set(candidate.name, candidate);
  };

  for (const name of FIRST_PARTY_BACKENDS) {
    add({ name, location: await locatePackage(name, directories), missingReason: 'not installed' });
  }
  for (const directory of directories) {
    for (const found of await scanNodeModules(directory)) add(found);
  }
  const requested = [...(options.packages ?? []), ...(env.KILN_BACKENDS ?? '').split(',')]
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of requested) add(await locateRequested(entry, directories));

  return Promise.all([...candidates.values()].map((candidate) => loadCandidate(candidate)));
}

async function loadCandidate(candidate: Candidate): Promise<DiscoveredPackage> {
  const { name, location } = candidate;
  if (location === undefined) return { name, loaded: false, reason: candidate.missingReason };
  let module: Record<string, unknown>;
  try {
    const entry = (await isDirectory(location)) ? await packageEntry(location) : location;
    module = (await import(pathToFileURL(entry).href)) as Record<string, unknown>;
  } catch (error) {
    return { name, loaded: false, path: location, reason: `failed to load: ${messageOf(error)}` };
  }
  const plugin = findPlugin(module);
  if (plugin === undefined) {
    const exported = Object.keys(module).join(', ') || 'nothing';
    return {
      name,
      loaded: false,
      path: location,
      reason: `has no \`default\` or \`plugin\` export that is a BackendPlugin (it exports: ${exported})`,
    };
  }
  const existing = getBackendPlugin(plugin.name);
  if (existing !== undefined && existing !== plugin) {
    return {
      name,
      loaded: false,
      path: location,
      backend: plugin.name,
      reason: `skipped: a different plugin named '${plugin.name}' is already registered (the first one registered is kept)`,
    };
  }
  try {
    registerBackend(plugin);
  } catch (error) {
    const rejected: DiscoveredPackage = { name, loaded: false, path: location, reason: messageOf(error) };
    if (typeof plugin.name === 'string') rejected.backend = plugin.name;
    if (KilnError.isInstance(error) && error.code === 'BACKEND_API_VERSION' && typeof plugin.apiVersion === 'number')
      rejected.apiVersion = plugin.apiVersion;
    return rejected;
  }
  return { name, loaded: true, path: location, backend: plugin.name };
}

function findPlugin(module: Record<string, unknown>): BackendPlugin | undefined {
  const fallback = module.default as Record<string, unknown> | undefined;
  // A CommonJS package imported from ESM shows up as { default: module.exports }.
  const candidates = [module.default, module.plugin, fallback?.default, fallback?.plugin];
  return candidates.find(
    (value): value is BackendPlugin =>
      typeof value === 'object' &&
      value !== null &&
      typeof (value as BackendPlugin).name === 'string' &&
      typeof (value as BackendPlugin).create === 'function',
  );
}

async function locateRequested(entry: string, directories: string[]): Promise<Candidate> {
  if (entry.startsWith('file:') || isAbsolute(entry) || entry.startsWith('.') || entry.includes('\\')) {
    const path = entry.startsWith('file:') ? fileURLToPath(entry) : resolve(entry);
    const exists = await stat(path).then(
      () => true,
      () => false,
    );
    return {
      name: entry,
      location: exists ? path : undefined,
      missingReason: `listed in KILN_BACKENDS, but ${path} does not exist`,
    };
  }
  if (!PACKAGE_NAME.test(entry)) {
    return {
      name: entry,
      location: undefined,
      missingReason: 'listed in KILN_BACKENDS, but it is neither a package name nor a path',
    };
  }
  return {
    name: entry,
    location: await locatePackage(entry, directories),
    missingReason: `listed in KILN_BACKENDS, but not found in any node_modules directory searched (${directories.join(', ')})`,
  };
}

/** node_modules directories above each start (nearest first), without duplicates, like Node's lookup. */
function nodeModulesDirectories(starts: string[]): string[] {
  const directories: string[] = [];
  for (const start of starts) {
    let directory = start;
    for (;;) {
      const candidate = basename(directory) === 'node_modules' ? directory : join(directory, 'node_modules');
      if (!directories.includes(candidate)) directories.push(candidate);
      const parent = dirname(directory);
      if (parent === directory) break;
      directory = parent;
    }
  }
  return directories;
}

async function scanNodeModules(directory: string): Promise<Candidate[]> {
  const names: string[] = [];
  for (const entry of await listDirectory(directory)) {
    if (entry.startsWith(PACKAGE_PREFIX)) names.push(entry);
    else if (entry.startsWith('@')) {
      for (const scoped of await listDirectory(join(directory, entry))) {
        if (scoped.startsWith(PACKAGE_PREFIX)) names.push(`${entry}/${scoped}`);
      }
    }
  }
  const found: Candidate[] = [];
  // Only real packages: a stray file or folder without package.json is not a backend.
  for (const name of names.sort()) {
    if (await hasManifest(join(directory, ...name.split('/')))) {
      found.push({ name, location: join(directory, ...name.split('/')), missingReason: '' });
    }
  }
  return found;
}

async function locatePackage(name: string, directories: string[]): Promise<string | undefined> {
  for (const directory of directories) {
    const candidate = join(directory, ...name.split('/'));
    if (await hasManifest(candidate)) return candidate;
  }
  return undefined;
}

async function hasManifest(directory: string): Promise<boolean> {
  return stat(join(directory, 'package.json')).then(
    (info) => info.isFile(),
    () => false,
  );
}

/** The file `import(packageName)` would load, from package.json exports, then main, then index.js. */
async function packageEntry(directory: string): Promise<string> {
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(await readFile(join(directory, 'package.json'), 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`cannot read ${join(directory, 'package.json')}: ${messageOf(error)}`);
  }
  const exported = rootExport(manifest.exports);
  const target = exported ?? (typeof manifest.main === 'string' ? manifest.main : 'index.js');
  const base = resolve(directory, target);
  const tries = exported !== undefined ? [base] : [base, `${base}.js`, `${base}.cjs`, join(base, 'index.js')];
  for (const file of tries) {
    if (
      await stat(file).then(
        (info) => info.isFile(),
        () => false,
      )
    )
      return file;
  }
  throw new Error(`its entry point ${base} does not exist (is the package built?)`);
}

/** The target of the "." export for an import from Node, or undefined when there is no exports map. */
function rootExport(exports: unknown): string | undefined {
  if (exports === undefined || exports === null) return undefined;
  if (
    typeof exports === 'object' &&
    !Array.isArray(exports) &&
    Object.keys(exports).some((key) => key.startsWith('.'))
  ) {
    return conditionalTarget((exports as Record<string, unknown>)['.']);
  }
  return conditionalTarget(exports);
}

function conditionalTarget(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    for (const item of value) {
      const target = conditionalTarget(item);
      if (target !== undefined) return target;
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const conditions = value as Record<string, unknown>;
  // Node picks the first key (in object order) whose condition is active.
  for (const [condition, target] of Object.entries(conditions)) {
    if (!ACTIVE_CONDITIONS.has(condition)) continue;
    const resolved = conditionalTarget(target);
    if (resolved !== undefined) return resolved;
  }
  // import() also loads CommonJS, so a require-only package still works.
  return conditionalTarget(conditions.require);
}

function defaultStartDirectories(): string[] {
  const starts = [process.cwd()];
  const own = ownDirectory();
  if (own !== undefined) starts.push(own);
  return starts;
}

/** Where this copy of @kiln/core is installed: __dirname in the CJS build, import.meta.url in ESM. */
function ownDirectory(): string | undefined {
  if (typeof __dirname === 'string') return __dirname;
  try {
    return dirname(fileURLToPath(import.meta.url));
  } catch {
    return undefined;
  }
}

async function listDirectory(directory: string): Promise<string[]> {
  return readdir(directory).catch(() => [] as string[]);
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
