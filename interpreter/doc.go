// Package interpreter is where a playbook's meaning lives: everything the
// generic workflow evaluates, and the workflow itself. Its packages, lowest
// first, each importing only those below it:
//
//   - spec/expr: expressions and templates (expr-lang only)
//   - spec: the playbook's AST, its replay-safe decoder and graph checks
//   - contract: what a history records (activity input and output, failure
//     details, the aggregate, the workflow's wire names), whose JSON names
//     never change
//   - engine: the run's pure state machine
//   - playbookwf: the generic Temporal workflow, a thin adapter that turns
//     the engine's decisions into commands
//
// None of them reads the clock, the host or a file; none imports submit/
// or activities/ (layout_test.go here, and `make vet`'s workflowcheck).
package interpreter
