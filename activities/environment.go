package activities

import (
	"os"
	"sort"
	"strings"

	"playbook/interpreter/spec"
	"playbook/interpreter/spec/expr"
)

// baseEnv are the worker's variables every step process sees: enough to
// find programs and behave like a login shell, nothing that holds a secret.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// defaultPath is PATH for a step when the worker itself has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// neverPassed reports a variable of the worker that no step ever sees, even
// when the worker lists it in StepEnv: Temporal's own settings (address,
// namespace, API key, TLS key paths) and its exporter's (OTEL_*, whose
// headers carry a collector's credentials) belong to the worker; the
// worker's own TRACEPARENT and TRACESTATE would name another trace than
// the attempt's.
func neverPassed(name string) bool {
	return strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "OTEL_") || name == "TRACEPARENT" || name == "TRACESTATE"
}

// reserved reports a variable the engine sets for each attempt; a step's
// own env cannot override it (submission refuses one; a frozen playbook
// from before may still name one).
func reserved(name string) bool { return spec.EngineEnv(name) }

// stepEnvironment is a step process's whole environment: baseEnv and the
// worker variables named in passThrough (as the worker has them), then the
// step's own env, then the engine's PLAYBOOK_* variables, which win. The
// worker's other variables (cloud credentials, tokens) stay with it.
func stepEnvironment(passThrough []string, own map[string]any, engine []string) []string {
	var env []string
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, baseEnv...), passThrough...) {
		if seen[name] || neverPassed(name) || reserved(name) {
			continue
		}
		seen[name] = true
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		} else if name == "PATH" {
			env = append(env, "PATH="+defaultPath)
		}
	}
	keys := make([]string, 0, len(own))
	for k := range own {
		if !reserved(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+expr.Text(own[k]))
	}
	return append(env, engine...)
}
