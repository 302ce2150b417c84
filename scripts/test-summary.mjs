// Sums vitest's JSON reports (packages/*/test-results.json, examples/*/test-results.json) into the closing line CI reads:
// "N passed, N failed, N skipped". A package with a test script but no report counts as one
// failure (its test run crashed before reporting). `--failed-step <name>` (repeatable) adds one failure
// for a CI step that is not a test run, such as the linter. Exits 1 when anything failed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const repository = join(import.meta.dirname, '..');
const failedSteps = [];
for (let index = 2; index < process.argv.length; index++) {
  const argument = process.argv[index];
  if (argument !== '--failed-step' || index + 1 >= process.argv.length) {
    console.error(
      `test-summary: unknown argument ${argument}; usage: node scripts/test-summary.mjs [--failed-step <name>]…`,
    );
    process.exit(2);
  }
  failedSteps.push(process.argv[++index]);
}
const directories = ['packages', 'examples']
  .filter((folder) => existsSync(join(repository, folder)))
  .flatMap((folder) =>
    readdirSync(join(repository, folder))
      .sort()
      .map((name) => join(repository, folder, name)),
  );
let passed = 0;
let failed = 0;
let skipped = 0;
for (const directory of directories) {
  const manifestPath = join(directory, 'package.json');
  if (!existsSync(manifestPath)) continue;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  if (!manifest.scripts?.test) continue;
  const reportPath = join(directory, 'test-results.json');
  if (!existsSync(reportPath)) {
    console.log(`${manifest.name}: no test report (the test run did not finish)`);
    failed += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  const suiteFailures = (report.testResults ?? []).filter(
    (file) => file.status === 'failed' && (file.assertionResults ?? []).length === 0,
  ).length;
  passed += report.numPassedTests ?? 0;
  failed += (report.numFailedTests ?? 0) + suiteFailures;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  console.log(
    `${manifest.name}: ${report.numPassedTests} passed, ${report.numFailedTests + suiteFailures} failed, ${report.numPendingTests + (report.numTodoTests ?? 0)} skipped`,
  );
}
for (const step of failedSteps) {
  console.log(`${step}: failed`);
  failed += 1;
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
