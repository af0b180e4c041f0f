package spec

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Parse reads and validates a playbook. file is used in error messages only.
// Every error is an *Error naming the file, the line and, where there is one,
// the step.
//
// Parse is what the workflow runs on a frozen playbook, so it never gets
// stricter; the checks added since a playbook could be submitted run in
// submit.ParseStrict, at submission only (docs/VERSIONING.md).
func Parse(file string, src []byte) (*Playbook, error) {
	pb, err := Decode(file, src)
	if err != nil {
		return nil, err
	}
	return pb, nil
}

// Decode decodes and validates. The playbook is nil when decoding failed;
// when only validation failed it comes back with the errors, so that
// ParseStrict can add its own.
func Decode(file string, src []byte) (*Playbook, error) {
	d := &decoder{file: file, lines: map[string]int{}}
	docs := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := docs.Decode(&doc); err != nil && err != io.EOF {
		return nil, d.yamlError(err, src)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Line: 1, Msg: "empty playbook"}
	}
	if err := d.expandAliases(&doc); err != nil {
		return nil, err
	}
	pb := &Playbook{File: file, FailureMode: FailureStop, OnTimeout: TimeoutCancel, Workload: map[string]any{}, LostAttempts: DefaultLostAttempts}
	decodeErr := d.playbook(doc.Content[0], pb)
	if decodeErr != nil && (pb.byName == nil || len(pb.Steps) == 0) {
		return nil, decodeErr
	}
	// A second document would be dropped: a playbook is the first one.
	var second yaml.Node
	if docs.Decode(&second) == nil && len(second.Content) > 0 {
		d.step = "" // outside any step
		d.refuse(second.Content[0], "a second YAML document (after ---): a playbook is one document; put the other playbook in a file of its own")
	}
	pb.submitErrs = d.submitErrs
	pb.lines = d.lines
	// Every step that decoded, even with errors, is validated, so that one
	// pass tells every mistake of the file.
	errs := Errors{}.Add(file, decodeErr)
	errs = append(errs, pb.WithoutBroken(Errors{}.Add(file, validate(pb)))...)
	return pb, errs.Err()
}

// decoder walks YAML nodes; step is the step being decoded, for errors.
type decoder struct {
	file string
	step string
	// submitErrs are problems CheckSubmit reports (see refusals.go).
	submitErrs []error
	// aliasBomb is the refusal of aliases that expand past the bound
	// (expandAliases): YAML's decoder then refuses them too, in a value
	// that uses them, and that is the same problem (value).
	aliasBomb error
	// lines remembers where some keys are, for checks made after decoding.
	lines map[string]int
	// stepTable is the table of a step's keys, made once, and stepAt the
	// step its decoders write to (see stepTarget).
	stepTable keys
	stepAt    stepTarget
}

func (d *decoder) errf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Step: d.step, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (d *decoder) yamlError(err error, src []byte) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if tab := tabIndentedLine(src, m[2], line); tab > 0 {
			return &Error{File: d.file, Line: tab, Msg: "tabs cannot indent YAML: indent with spaces"}
		}
		if at, hint := unquotedTemplateError(src); at > 0 {
			return &Error{File: d.file, Line: at, Msg: hint}
		}
		return &Error{File: d.file, Line: line, Msg: m[2] + yamlAdvice(m[2])}
	}
	if line, what := unreadableByte(src); line > 0 {
		return &Error{File: d.file, Line: line, Msg: what}
	}
	return &Error{File: d.file, Msg: strings.TrimPrefix(msg, "yaml: ")}
}

// yamlAdvice says what usually causes one of YAML's own errors, "" when
// it knows nothing to add.
func yamlAdvice(msg string) string {
	switch {
	case strings.HasPrefix(msg, "did not find expected key"), strings.HasPrefix(msg, "did not find expected '-' indicator"):
		return ": check the indentation of this line and the next: the keys of one mapping line up"
	case strings.HasPrefix(msg, "mapping values are not allowed in this context"):
		return `: a value that holds ": " must be quoted ("a: b"), or a key is indented too far`
	case strings.HasPrefix(msg, "found character that cannot start any token"):
		return ": a value starting with @ or ` (or holding a tab) must be quoted"
	case strings.HasPrefix(msg, "did not find expected ',' or '}'"), strings.HasPrefix(msg, "did not find expected ',' or ']'"):
		return ": a {...} or [...] is not closed, or a value in it holds a comma or a colon and must be quoted"
	case strings.HasPrefix(msg, "could not find expected ':'"):
		return ": a key needs a colon and a space after it (key: value)"
	case strings.HasPrefix(msg, "found unexpected end of stream"), strings.HasPrefix(msg, "found unexpected end"):
		return ": a quote, bracket or brace opened above is not closed"
	}
	return ""
}

// unreadableByte finds the first line YAML cannot read as text: bytes
// that are not UTF-8, or a control character other than tab, line feed and
// carriage return (a NUL, say); 0 when there is none.
func unreadableByte(src []byte) (line int, what string) {
	line = 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, fmt.Sprintf("byte 0x%02x is not UTF-8 text: save the file as UTF-8", src[i])
		case r == '\n':
			line++
		case r < 0x20 && r != '\t' && r != '\r', r == 0x7f:
			return line, fmt.Sprintf("control character %U: a playbook is text; write it as an escape in a double-quoted string (\"\\x%02x\")", r, r)
		}
		i += size
	}
	return 0, ""
}

// fields calls the decoder of each key of a mapping node from the
// mapping's table (schema.go); a key not in the table is an error, so a
// misspelt key never vanishes.
func (d *decoder) fields(n *yaml.Node, what string, handlers keys) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, "%s must be a mapping", what)
	}
	// Every key is decoded even after a bad one, so that one pass reports
	// every error of the mapping.
	var errs Errors
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		h, ok := handlers[k.Value]
		switch {
		case isExtension(k):
			// x-...: the place for anchors; ignored.
		case !ok:
			errs = errs.Add(d.file, d.errf(k, "unknown key %q in %s (known: %s)", k.Value, what, strings.Join(slices.Sorted(maps.Keys(handlers)), ", ")))
		case seen[k.Value]:
			errs = errs.Add(d.file, d.errf(k, "key %q given twice in %s", k.Value, what))
		default:
			seen[k.Value] = true
			errs = errs.Add(d.file, h.decode(v))
		}
	}
	return errs.Err()
}
