package contract

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf16"
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

// SecretForms are the texts a secret is hidden as wherever a step may have
// printed it: the secret as it is, and as programs commonly print it —
// inside a JSON string (as Python's json.dumps writes it, with non-ASCII
// letters as \u escapes, lower- or upper-case, or as they are; as Go
// writes it, <, > and & escaped too; with / escaped, as PHP does),
// percent-encoded (a query value, with + or %20 for a space; a path
// segment; every byte but letters, digits and -_.~ escaped), in base64
// (standard and URL-safe, with and without padding, of the secret alone
// and of the secret and a newline, as `echo "$S" | base64` writes it) and
// in hex (lower and upper case). Forms equal to another come once; the
// secret itself is first.
func SecretForms(secret string) []string {
	if secret == "" {
		return nil
	}
	forms := []string{secret}
	for _, ascii := range []jsonNonASCII{nonASCIIRaw, nonASCIILower, nonASCIIUpper} {
		for _, html := range []bool{false, true} {
			for _, slash := range []bool{false, true} {
				forms = append(forms, jsonEscape(secret, ascii, html, slash))
			}
		}
	}
	forms = append(forms,
		url.QueryEscape(secret), strings.ReplaceAll(url.QueryEscape(secret), "+", "%20"),
		url.PathEscape(secret), percentEscapeAll(secret))
	for _, s := range []string{secret, secret + "\n"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(s)))
		}
	}
	forms = append(forms, hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))))
	seen := map[string]bool{}
	out := forms[:0]
	for _, f := range forms {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// jsonNonASCII is how a JSON encoder writes a letter outside ASCII.
type jsonNonASCII int

const (
	nonASCIIRaw   jsonNonASCII = iota // as UTF-8 (JavaScript, Go, ensure_ascii=False)
	nonASCIILower                     // \u00e9 (Python's default)
	nonASCIIUpper                     // \u00E9 (Java's, .NET's)
)

// jsonEscape is s as the inside of a JSON string: ", \ and control
// characters escaped (\b \f \n \r \t short, the others \u00XX), and the
// rest as the options say.
func jsonEscape(s string, ascii jsonNonASCII, html, slash bool) string {
	hexDigits := "%04x"
	if ascii == nonASCIIUpper {
		hexDigits = "%04X"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '/' && slash:
			b.WriteString(`\/`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20, html && (r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029):
			fmt.Fprintf(&b, `\u`+hexDigits, r)
		case r > 0x7f && ascii != nonASCIIRaw:
			for _, unit := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u`+hexDigits, unit)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// percentEscapeAll percent-encodes every byte of s but ASCII letters,
// digits and -_.~ (Python's quote(s, safe=""), JavaScript's
// encodeURIComponent for most texts).
func percentEscapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
