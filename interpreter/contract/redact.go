package contract

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces a secret in a URL that reaches a message.
const redacted = "REDACTED"

// urlInText finds URLs inside free text (an error message, a stderr tail).
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// secretParams are query parameters whose values are credentials, by exact
// name; any name containing one of secretParamParts is one too.
var secretParams = map[string]bool{
	"key": true, "sig": true, "auth": true, "pass": true, "pwd": true, "code": true,
}

var secretParamParts = []string{"token", "secret", "password", "passwd", "signature", "credential", "api_key", "apikey", "session"}

// Redact hides the credentials in the URLs of s: the password of a
// user:password@ part and the values of query parameters such as token,
// access_token, api_key, key, signature or password. Every step error, and
// so every event, status line, Web UI detail and webhook body that repeats
// it, goes through here.
func Redact(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, redactURL)
}

func redactURL(raw string) string {
	out := raw
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		authority, path, hasPath := strings.Cut(rest, "/")
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			if user, _, hasPassword := strings.Cut(authority[:at], ":"); hasPassword {
				authority = user + ":" + redacted + authority[at:]
			}
		}
		out = scheme + "://" + authority
		if hasPath {
			out += "/" + path
		}
	}
	base, query, ok := strings.Cut(out, "?")
	if !ok {
		return out
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	params := strings.Split(query, "&")
	for i, p := range params {
		name, _, hasValue := strings.Cut(p, "=")
		if hasValue && secretParam(name) {
			params[i] = name + "=" + redacted
		}
	}
	out = base + "?" + strings.Join(params, "&")
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

func secretParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.ToLower(name)
	if secretParams[name] {
		return true
	}
	for _, part := range secretParamParts {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// RedactError is a step error as it leaves the worker: its message and
// every string in its details redacted.
func RedactError(e StepError) StepError {
	e.Message = Redact(e.Message)
	e.Details = redactValue(e.Details)
	return e
}

func redactValue(v any) any {
	return MapLeaves(v, func(leaf any) any {
		if s, ok := leaf.(string); ok {
			return Redact(s)
		}
		return leaf
	})
}

// MapLeaves is a copy of v, a tree of mappings and lists, with every other
// value in it (a leaf) replaced by f's result for it.
func MapLeaves(v any, f func(leaf any) any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = MapLeaves(e, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = MapLeaves(e, f)
		}
		return out
	}
	return f(v)
}
