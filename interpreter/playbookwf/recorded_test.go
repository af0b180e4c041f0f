package playbookwf

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"playbook/interpreter/contract"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "write testdata/recorded.golden again")

// What a run writes to its history travels as JSON under these names:
// the workflows' inputs, the activities' inputs and outputs, the aggregate
// and the failure details, a loop driver's continue-as-new input, the
// signals. A history recorded yesterday is read today with the same names,
// so a renamed, retyped or removed name fails here before it fails a run
// in flight (docs/VERSIONING.md). A new field adds a line: write the file
// again with -update and say in the commit why it is safe to add.
func TestRecordedNamesStay(t *testing.T) {
	roots := []any{
		contract.Input{}, LoopBatchInput{}, contract.LoopInput{}, contract.LoopProgressSignal{},
		contract.StepInput{}, contract.StepOutput{}, contract.FailureDetails{}, contract.AttemptLog{},
		contract.NotifyInput{}, contract.Aggregate{}, contract.Outcome{}, contract.ApprovalDecision{},
		contract.TriggerInput{},
	}
	var out strings.Builder
	seen := map[reflect.Type]bool{}
	for _, r := range roots {
		describe(&out, reflect.TypeOf(r), seen)
	}
	golden := filepath.Join("testdata", "recorded.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(out.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), out.String(), "a name recorded in histories changed")
}

// describe writes a struct type's JSON names and their types, then every
// struct type they reach, each once.
func describe(out *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	t = deref(t)
	if t.Kind() != reflect.Struct || seen[t] || leaf(t) {
		return
	}
	seen[t] = true
	fmt.Fprintf(out, "%s\n", typeName(t))
	var next []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if opts != "" {
			opts = " ," + opts
		}
		fmt.Fprintf(out, "  %s %s%s\n", name, typeName(f.Type), opts)
		next = append(next, f.Type)
	}
	for _, n := range next {
		for n.Kind() == reflect.Pointer || n.Kind() == reflect.Slice || n.Kind() == reflect.Map {
			n = n.Elem()
		}
		describe(out, n, seen)
	}
}

// typeName is a type as JSON sees it, without the Go package it is in:
// moving a type between packages changes nothing recorded.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + typeName(t.Elem())
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Map:
		return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
	case reflect.Interface:
		return "any"
	}
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// leaf types write themselves (time, and types with their own JSON, such as
// an expression written as its source).
func leaf(t reflect.Type) bool {
	marshaler := reflect.TypeFor[json.Marshaler]()
	return t == reflect.TypeFor[time.Time]() || t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)
}
