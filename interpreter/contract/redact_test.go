package contract

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		`GET https://api.example.com/v1?token=abc123&page=2 answered 500`:            `GET https://api.example.com/v1?token=REDACTED&page=2 answered 500`,
		`Get "http://user:hunter2@127.0.0.1:9/x": dial tcp: refused`:                 `Get "http://user:REDACTED@127.0.0.1:9/x": dial tcp: refused`,
		`postgres://etl:pa:ss@db:5432/etl?sslmode=disable&password=x`:                `postgres://etl:REDACTED@db:5432/etl?sslmode=disable&password=REDACTED`,
		`https://s3/x?X-Amz-Credential=AK&X-Amz-Signature=ff&X-Amz-Security-Token=t`: `https://s3/x?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED`,
		`https://maps/api?key=AIza&access_token=t#frag`:                              `https://maps/api?key=REDACTED&access_token=REDACTED#frag`,
		`https://x?client_secret=s&api_key=k&sig=z&q=keep`:                           `https://x?client_secret=REDACTED&api_key=REDACTED&sig=REDACTED&q=keep`,
		`git@github.com and https://github.com/org/repo stay as they are`:            `git@github.com and https://github.com/org/repo stay as they are`,
		`no url here: token=abc`:                                                     `no url here: token=abc`,
	} {
		require.Equal(t, want, Redact(in), in)
	}
	e := RedactError(StepError{Type: "http_status", Message: "POST http://h/?token=t1 answered 500",
		Details: map[string]any{"body": "see http://h/?token=t2", "list": []any{"http://u:p@h/"}, "n": 1}})
	require.Equal(t, "POST http://h/?token=REDACTED answered 500", e.Message)
	require.Equal(t, map[string]any{"body": "see http://h/?token=REDACTED", "list": []any{"http://u:REDACTED@h/"}, "n": 1}, e.Details)
}

// A secret's forms are those programs print it in: each line below is what
// one of them wrote for the secret p"w\é<tab>/<x (Python's json.dumps with
// and without ensure_ascii, Go's encoding/json, Java's upper-case escapes,
// PHP's escaped slash, urllib's quote and quote_plus, Go's PathEscape,
// base64 and `echo | base64`, hex).
func TestSecretForms(t *testing.T) {
	secret := "p\"w\\é\t/<x"
	forms := SecretForms(secret)
	goJSON, err := json.Marshal(secret)
	require.NoError(t, err)
	for _, printed := range []string{
		secret,
		`p\"w\\\u00e9\t/<x`,
		`p\"w\\é\t/<x`,
		strings.Trim(string(goJSON), `"`),
		`p\"w\\\u00E9\t/<x`,
		`p\"w\\\u00e9\t\/<x`,
		`p%22w%5C%C3%A9%09%2F%3Cx`,
		`p%22w%5C%C3%A9%09%2F%3Cx`,
		url.PathEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		`cCJ3XMOpCS88eAo=`,
		hex.EncodeToString([]byte(secret)),
	} {
		require.Contains(t, forms, printed)
	}
	require.Equal(t, secret, forms[0])
	require.Len(t, forms, len(slices.Compact(slices.Sorted(slices.Values(forms)))), "each form once")
	require.Equal(t, []string{"abc", "YWJj", "YWJjCg==", "YWJjCg", "616263"}, SecretForms("abc"), "a secret no encoding changes has few forms")
	require.Nil(t, SecretForms(""))
}
