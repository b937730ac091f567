// Mocha's spec reporter, then the plain closing line CI reads for a test count ("N passed, N failed, N skipped"):
// mocha's own "N passing" is not among the closing lines CI recognises.
const { reporters } = require("mocha");

class SpecWithTotals extends reporters.Spec {
    constructor(runner, options) {
        super(runner, options);
        runner.once("end", () => console.log(`${this.stats.passes} passed, ${this.stats.failures} failed, ${this.stats.pending} skipped`));
    }
}

module.exports = SpecWithTotals;
