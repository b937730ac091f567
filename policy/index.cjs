// Where Pulumi's policy-pack runner starts (`pulumi preview --policy-pack policy`): it require()s the pack
// (@pulumi/pulumi cmd/run-policy-pack/run.js:240), after registering ts-node for require() alone (:145-160). import()
// goes through Node's own type stripping instead, so the pack runs as the plan and the tests run it.
module.exports = import("./pack.ts");
