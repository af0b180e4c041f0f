package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"playbook/internal/userfile"
	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// DefaultSecretsDir is where a worker reads the secrets steps name with
// {secret: NAME}: the directory Docker and Kubernetes mount secrets in.
const DefaultSecretsDir = "/run/secrets"

// maxSecretBytes bounds one secret's file.
const maxSecretBytes = 64 << 10

// redactedSecret stands, in a step's output, error and logs, for a secret's
// value.
const redactedSecret = "***"

// withSecrets resolves the secrets of a step's rendered tool fields: each
// field the playbook's text names a secret in (fields, from
// StepInput.Secrets) and that still holds {secret: NAME} gets the secret's
// text, read from the worker's secrets directory now. A value a template
// rendered into that shape is not a secret and stays as it is. It returns
// a copy of toolSpec with the texts, and the redactor that hides them in
// whatever the attempt writes; a spec without secrets comes back as it
// is, with a nil redactor.
func (a *Activities) withSecrets(toolSpec map[string]any, fields map[string]string) (map[string]any, *redactor, *contract.StepError) {
	if len(fields) == 0 {
		return toolSpec, nil, nil
	}
	out := maps.Clone(toolSpec)
	var values []string
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		key, name, _ := strings.Cut(field, ".")
		values0, _ := out[key].(map[string]any)
		if secret, ok := spec.SecretRef(values0[name]); !ok || secret != fields[field] {
			continue
		}
		value, err := a.readSecret(fields[field])
		if err != nil {
			return nil, nil, &contract.StepError{Type: contract.ErrTool, Message: fmt.Sprintf("%s %s: %v", key, name, err)}
		}
		resolved := maps.Clone(values0)
		resolved[name] = value
		out[key] = resolved
		if value != "" {
			values = append(values, value)
		}
	}
	return out, newRedactor(values), nil
}

// readSecret reads one secret: a regular file of at most 64 KiB named
// name in the secrets directory, without its final line break. The error
// names the secret and the directory, never a value.
func (a *Activities) readSecret(name string) (string, error) {
	if err := spec.CheckSecretName(name); err != nil {
		return "", err
	}
	dir := a.SecretsDir
	if dir == "" {
		dir = DefaultSecretsDir
	}
	f, st, err := userfile.Open(filepath.Join(dir, name))
	var notRegular *userfile.NotRegular
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("secret %q is not in this worker's secrets directory %s (playbook worker --secrets-dir)", name, dir)
	case errors.As(err, &notRegular):
		return "", fmt.Errorf("secret %q in %s is not a regular file", name, dir)
	case err != nil:
		return "", fmt.Errorf("secret %q cannot be read from %s: %v", name, dir, err)
	}
	defer f.Close()
	// The key that decrypts every history is the worker's, not a step's.
	if key := os.Getenv("PLAYBOOK_CODEC_KEY_FILE"); key != "" {
		if kst, err := os.Stat(key); err == nil && os.SameFile(st, kst) {
			return "", fmt.Errorf("secret %q in %s is the worker's codec key (PLAYBOOK_CODEC_KEY_FILE), which no step may read: keep the key outside the secrets directory", name, dir)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("secret %q cannot be read from %s: %v", name, dir, err)
	case len(b) > maxSecretBytes:
		return "", fmt.Errorf("secret %q in %s is larger than 64 KiB", name, dir)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// redactor replaces secrets' texts with *** in what an attempt writes:
// each secret in every form contract.SecretForms names.
type redactor struct {
	secrets [][]byte // longest first
	longest int
	first   [256]bool // the first bytes of the secrets
}

type redactorKey struct{}

func newRedactor(values []string) *redactor {
	r := &redactor{}
	var forms []string
	for _, v := range values {
		forms = append(forms, contract.SecretForms(v)...)
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, v := range slices.Compact(forms) {
		r.secrets = append(r.secrets, []byte(v))
		r.longest = max(r.longest, len(v))
		r.first[v[0]] = true
	}
	if len(r.secrets) == 0 {
		return nil
	}
	return r
}

// withRedactor and redactorOf carry an attempt's redactor to the processes
// it runs (the step's, a recovery script's), whose logs it filters.
func withRedactor(ctx context.Context, r *redactor) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, redactorKey{}, r)
}

func redactorOf(ctx context.Context) *redactor {
	r, _ := ctx.Value(redactorKey{}).(*redactor)
	return r
}

// text redacts a whole string.
func (r *redactor) text(s string) string {
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, string(v), redactedSecret)
	}
	return s
}

// value redacts every string in a result or an error's details.
func (r *redactor) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.text(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.text(k)] = r.value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.value(e)
		}
		return out
	}
	return v
}

// result redacts an attempt's result and error.
func (r *redactor) result(o ToolResult) ToolResult {
	if r == nil {
		return o
	}
	o.Result = r.value(o.Result)
	if o.Err != nil {
		e := *o.Err
		e.Message, e.Details = r.text(e.Message), r.value(e.Details)
		o.Err = &e
	}
	return o
}

// stream redacts a stream written in pieces: a secret cut between two
// pieces is still found, since the end of a piece that could begin one is
// held back until the next piece (or the end) says.
type stream struct {
	r       *redactor
	pending []byte
}

// feed returns what of p (after what was held back) can be written now.
func (s *stream) feed(p []byte) []byte {
	b := append(s.pending, p...)
	var out []byte
	i := 0
scan:
	for i < len(b) {
		if !s.r.first[b[i]] {
			out = append(out, b[i])
			i++
			continue
		}
		if len(b)-i < s.r.longest {
			for _, v := range s.r.secrets {
				if len(v) > len(b)-i && bytes.HasPrefix(v, b[i:]) {
					break scan // may be the start of a secret, or of a longer one: wait for more
				}
			}
		}
		for _, v := range s.r.secrets {
			if bytes.HasPrefix(b[i:], v) {
				out = append(out, redactedSecret...)
				i += len(v)
				continue scan
			}
		}
		out = append(out, b[i])
		i++
	}
	s.pending = append(s.pending[:0:0], b[i:]...)
	return out
}

// end returns what was held back at the stream's end: the beginning of a
// secret, which is redacted too unless it is only a character or two.
func (s *stream) end() []byte {
	p := s.pending
	s.pending = nil
	if len(p) > 2 {
		return []byte(redactedSecret)
	}
	return p
}

// keepOnRedirect is client, except that a redirect to another host does
// not carry the request's headers that hold a secret (Go's client drops
// only Authorization and cookies there): the secret goes to the host the
// playbook named, never to one an answer names.
func (r *redactor) keepOnRedirect(client *http.Client) *http.Client {
	c := *client
	next := client.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host {
			for name, values := range req.Header {
				for _, v := range values {
					if r.text(v) != v {
						req.Header.Del(name)
						break
					}
				}
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// ReadSecret reads the secret name from the secrets directory dir as a
// step's attempt does ("": the default): a webhook's key.
func ReadSecret(dir, name string) (string, error) {
	return (&Activities{SecretsDir: dir}).readSecret(name)
}
