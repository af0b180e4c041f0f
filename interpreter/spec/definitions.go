package spec

import (
	"bytes"
	"encoding/json"
	"strings"

	"go.yaml.in/yaml/v3"
)

// StepDefinitions reads, for every step of a playbook's text, its
// definition in a canonical form: the step's mapping, anchors and merge
// keys resolved, as JSON with its keys sorted, so that key order, quoting
// and layout do not count. Left out is what changes nothing a step does:
// its `desc` and `x-` keys, and its routing (`next`, `depends_on`: a
// reused step's arcs are evaluated again). In is the rule set the step's
// failure_handler names, which decides its retries. `playbook retry`
// compares the definitions of two texts to tell which steps changed; a
// text that does not decode has none.
func StepDefinitions(src []byte) map[string]string {
	d := &decoder{lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	if d.expandAliases(&doc) != nil {
		return nil
	}
	root := doc.Content[0]
	steps, handlers := mappingValue(root, "workflow"), map[string]any{}
	if hs := mappingValue(root, "failure_handlers"); hs != nil && hs.Kind == yaml.SequenceNode {
		for _, h := range hs.Content {
			var v map[string]any
			if h.Decode(&v) == nil {
				if name, ok := v["name"].(string); ok {
					delete(v, "name")
					handlers[name] = v
				}
			}
		}
	}
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return nil
	}
	out := map[string]string{}
	for _, sn := range steps.Content {
		var v map[string]any
		if sn.Kind != yaml.MappingNode || sn.Decode(&v) != nil {
			continue
		}
		name, _ := v["step"].(string)
		if name == "" {
			continue
		}
		delete(v, "desc")
		delete(v, "next")
		delete(v, "depends_on")
		for k := range v {
			if strings.HasPrefix(k, "x-") {
				delete(v, k)
			}
		}
		if ref, ok := v["failure_handler"].(string); ok {
			// The name stands for its rules: renaming a handler changes
			// nothing, editing its rules changes every step that names it.
			v["failure_handler"] = handlers[ref]
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		out[name] = string(b)
	}
	return out
}

// mappingValue is the value of key in a mapping node, nil when absent.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// ScriptsNamed are the files a step runs, as its shell command and the
// recovery scripts of its failure handler name them: in each simple
// command (split at `;`, `&&`, `||`, `|`, `&`, parentheses and new
// lines), past `VAR=value` assignments, redirections and a wrapper
// (`exec`, `time`, `nohup`, `env`, `sudo`, `command`), the program when
// its word holds a slash (`./run.sh`, `scripts/load`), and the script an
// interpreter runs (`python3 scripts/t.py`, `bash s.sh`, `. ./env.sh`):
// its first argument that is not an option. A redirection's target
// (`>> /data/marks`), an argument of any other program (`cat
// /data/in.csv`, `--out dir/`) and a word with a template, a `$` or a
// `://` never count. Whether a word names a file is for the caller,
// which can look (submit.FileDigests).
func (s *Step) ScriptsNamed() []string {
	var out []string
	if s.Tool != nil && s.Tool.Kind == "shell" {
		cmd, _ := s.Tool.Spec["command"].(string)
		out = append(out, ScriptsRun(cmd)...)
	}
	if s.FailureHandler != nil {
		for _, r := range s.FailureHandler.Rules {
			out = append(out, ScriptsRun(r.RecoveryScript)...)
		}
	}
	return out
}

// interpreters run the script their first argument names.
var interpreters = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "source": true, ".": true,
	"python": true, "python3": true, "python2": true, "node": true, "ruby": true, "perl": true,
	"php": true, "Rscript": true, "deno": true, "bun": true, "tclsh": true, "lua": true,
}

// wrappers run the program that follows them (after their own options).
var wrappers = map[string]bool{"exec": true, "time": true, "nohup": true, "env": true, "sudo": true, "command": true, "nice": true}

// ScriptsRun are the files a shell command runs (see Step.ScriptsNamed).
func ScriptsRun(command string) []string {
	var out []string
	for _, words := range simpleCommands(command) {
		i := 0
		for i < len(words) && (isAssignment(words[i]) || wrappers[baseName(words[i])] || (i > 0 && wrappers[baseName(words[i-1])] && strings.HasPrefix(words[i], "-"))) {
			i++
		}
		if i == len(words) {
			continue
		}
		switch prog := words[i]; {
		case interpreters[baseName(prog)]:
			out = appendScript(out, interpreterScript(words[i+1:]))
		case strings.Contains(prog, "/"):
			out = appendScript(out, prog)
		}
	}
	return out
}

// baseName is a program's name without its directory.
func baseName(prog string) string { return prog[strings.LastIndex(prog, "/")+1:] }

// interpreterScript is the script an interpreter's arguments name: the
// first that is not an option; none with -c or -m (code given inline, or
// a module by name).
func interpreterScript(args []string) string {
	for _, a := range args {
		switch {
		case a == "-c" || a == "-m" || a == "-e":
			return ""
		case strings.HasPrefix(a, "-"):
			continue
		}
		return a
	}
	return ""
}

func appendScript(out []string, w string) []string {
	if w == "" || strings.Contains(w, "{{") || strings.Contains(w, "$") || strings.Contains(w, "://") {
		return out
	}
	return append(out, w)
}

func isAssignment(w string) bool {
	eq := strings.Index(w, "=")
	return eq > 0 && !strings.ContainsAny(w[:eq], "/-.")
}

// simpleCommands splits a shell command into its simple commands' words,
// quotes removed, redirections (and their targets) left out. It reads
// what a playbook's command is in practice, not every shell construct: a
// word it misreads only counts a file too many or too few for a retry.
func simpleCommands(command string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord, skipNext := false, false
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		switch {
		case skipNext:
			skipNext = false
		case isRedirection(w):
			// `>file` holds its target; a bare `>` takes the next word.
			skipNext = strings.TrimLeft(w, "0123456789&<>|") == "" && !strings.HasSuffix(w, "&")
		default:
			words = append(words, w)
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words, skipNext = nil, false
	}
	for i := 0; i < len(command); i++ {
		c := command[i]
		switch {
		case c == '\\' && i+1 < len(command):
			i++
			word.WriteByte(command[i])
			inWord = true
		case c == '\'' || c == '"':
			end := strings.IndexByte(command[i+1:], c)
			if end < 0 {
				end = len(command) - i - 1
			}
			word.WriteString(command[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == ' ' || c == '\t':
			endWord()
		case c == ';' || c == '\n' || c == '(' || c == ')' || c == '{' && !inWord || c == '}' && !inWord:
			endCommand()
		case c == '|' || c == '&':
			if (c == '&' || c == '|') && inWord && isRedirection(word.String()) {
				word.WriteByte(c) // 2>&1, >|
				continue
			}
			if c == '&' && i+1 < len(command) && command[i+1] == '>' {
				endWord()
				word.WriteByte(c) // &> file
				inWord = true
				continue
			}
			endCommand()
		case c == '<' || c == '>':
			if inWord && !isRedirection(word.String()) && strings.Trim(word.String(), "0123456789") != "" {
				endWord()
			}
			word.WriteByte(c)
			inWord = true
		default:
			if inWord && isRedirection(word.String()) && strings.TrimLeft(word.String(), "0123456789&<>|") == "" && c != '&' {
				// `>file`: the target, attached.
				word.WriteByte(c)
				continue
			}
			word.WriteByte(c)
			inWord = true
		}
	}
	endCommand()
	return cmds
}

// isRedirection tells a word that is a redirection: `>`, `>>`, `2>`,
// `&>`, `<`, `2>&1`, with or without its target attached.
func isRedirection(w string) bool {
	t := strings.TrimLeft(w, "0123456789")
	t = strings.TrimPrefix(t, "&")
	return strings.HasPrefix(t, ">") || strings.HasPrefix(t, "<")
}

// reads reads a step's `reads`: a list of file paths, used as written.
func (d *decoder) reads(n *yaml.Node, out *[]string) error {
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, "reads must be a list of file paths, e.g. reads: [data/ref.csv]")
	}
	for _, it := range n.Content {
		var path string
		if err := d.str(it, "an item of reads", &path); err != nil {
			return err
		}
		if path == "" {
			return d.errf(it, "an item of reads must be a file path, not empty")
		}
		if strings.Contains(path, "://") {
			return d.errf(it, "reads names files where the playbook is, not %q", path)
		}
		if strings.Contains(path, "$") {
			return d.errf(it, "reads takes paths as written, without variables: %q", path)
		}
		d.refuseTemplates(it, "reads", "name the file as it is on disk; a retry compares its digest with the earlier run's")
		*out = append(*out, path)
	}
	return nil
}
