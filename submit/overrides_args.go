package submit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"playbook/internal/userfile"
)

// DecodeOverrides reads workload overrides from one JSON object (an
// --input file, a webhook's body); what names it in the errors. Numbers
// keep their digits (json.Number): a string key gets them as written, a
// whole number exactly.
func DecodeOverrides(b []byte, what string) (map[string]any, error) {
	w := map[string]any{}
	if kind := jsonKind(b); kind != "an object" {
		return nil, fmt.Errorf("%s: not a JSON object: it holds %s", what, kind)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&w); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %s", what, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%s: more than one JSON value; give one object", what)
	}
	if key := duplicateKey(b); key != "" {
		return nil, fmt.Errorf("%s: key %s is given twice: give it once", what, key)
	}
	return w, nil
}

// ReadOverrides reads a run's workload overrides as a front end gives
// them: a JSON object file (--input), then each KEY=VALUE (--set) on top.
func ReadOverrides(inputFile string, sets []string) (map[string]any, error) {
	w := map[string]any{}
	if inputFile != "" {
		b, err := userfile.Read(inputFile, MaxInputFileSize, "an --input file")
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", userfile.Show(inputFile), err)
		}
		if w, err = DecodeOverrides(b, "--input "+inputFile); err != nil {
			return nil, err
		}
	}
	for _, kv := range sets {
		key, raw, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("--set %q: write KEY=VALUE", kv)
		}
		path := strings.Split(key, ".")
		if slices.Contains(path, "") {
			return nil, fmt.Errorf("--set %q: the key %q has an empty part: write KEY=VALUE or KEY.SUBKEY=VALUE", kv, key)
		}
		m := w
		for i, p := range path[:len(path)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				if _, set := m[p]; set {
					return nil, fmt.Errorf("--set %s: %s is already set to a value that is not a mapping", kv, strings.Join(path[:i+1], "."))
				}
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		// The text as written: what it means depends on the key's default.
		m[path[len(path)-1]] = SetText(raw)
	}
	return w, nil
}

// jsonKind says what JSON value a text holds, as a person names it.
func jsonKind(b []byte) string {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number or something that is not JSON"
}

// duplicateKey is the first key given twice in one object of a JSON text
// (as a path, a.b), "" when there is none: decoding would keep the last
// and lose the other silently.
func duplicateKey(b []byte) string {
	type container struct {
		object bool
		seen   map[string]bool
		path   string
		key    bool // in an object: the next token is a key
	}
	var stack []*container
	last := "" // the key whose value comes next
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		var top *container
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			k, _ := tok.(string) // json.Decoder gives a key as a string, or the closing brace
			if tok != json.Delim('}') {
				if top.seen[k] {
					return strings.TrimPrefix(top.path+"."+k, ".")
				}
				top.seen[k], top.key, last = true, false, k
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			path := ""
			if top != nil {
				path = top.path
				if top.object {
					path += "." + last
				}
			}
			stack = append(stack, &container{object: tok == json.Delim('{'), seen: map[string]bool{}, path: path, key: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value has ended: its object expects a key again.
		if len(stack) > 0 {
			stack[len(stack)-1].key = true
		}
	}
}
