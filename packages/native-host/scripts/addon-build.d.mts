/** Names of `definitions` whose value in a CMakeCache.txt text differs from the one asked for. */
export function changedDefinitions(cacheText: string, definitions: Record<string, string>): string[];
