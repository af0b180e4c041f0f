package testsuite

import (
	"log/slog"
	"os"

	sdklog "go.temporal.io/sdk/log"
)

func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 4})))
}
