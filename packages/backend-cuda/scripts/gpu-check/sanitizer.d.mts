/** compute-sanitizer's tools that gpu-check runs. */
export const SANITIZER_TOOLS: readonly string[];
/** What one tool's output says: errors from its ERROR SUMMARY, else the count of its error lines. */
export function parseSanitizerOutput(text: string): { errors: number; summary: boolean };
