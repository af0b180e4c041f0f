package contract

import (
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
