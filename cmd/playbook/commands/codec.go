package commands

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"

	"playbook/internal/codec"
)

// useCodec gives client options the payload codec of a key file, else of
// $PLAYBOOK_CODEC_KEY or $PLAYBOOK_CODEC_KEY_FILE; without a key, nothing.
func useCodec(opts *client.Options, keyFile string) error {
	c, err := codec.Load(keyFile)
	if err != nil || c == nil {
		return err
	}
	opts.DataConverter, opts.FailureConverter = c.DataConverter(), c.FailureConverter()
	return nil
}

func codecKeyFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "codec-key-file", Usage: "encrypt payloads with the AES-256 key in `FILE` (base64 or hex; default $PLAYBOOK_CODEC_KEY, $PLAYBOOK_CODEC_KEY_FILE)"}
}

// serveCodec serves the remote codec protocol on addr until the returned
// server is closed; origins may call it from a browser.
func serveCodec(c *codec.AESGCM, addr string, origins []string) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: c.Handler(origins), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}

func codecServerCommand() *cli.Command {
	return &cli.Command{
		Name:  "codec-server",
		Usage: "serve Temporal's remote codec protocol (/encode, /decode) so the Web UI shows decrypted payloads",
		Description: "Set the Web UI's Codec Endpoint to this server's URL. Anyone who can reach it can decrypt\n" +
			"payloads: bind it to loopback or put it behind your authentication.",
		Flags: []cli.Flag{
			codecKeyFileFlag(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8081", Usage: "`HOST:PORT` to listen on"},
			&cli.StringSliceFlag{Name: "origin", Value: cli.NewStringSlice("http://127.0.0.1:8233", "http://localhost:8233"), Usage: "Web UI `URL`s allowed to call it from a browser"},
		},
		Action: func(c *cli.Context) error {
			keys, err := codec.Load(c.String("codec-key-file"))
			if err != nil {
				return cli.Exit("codec-server: "+err.Error(), exitInvalid)
			}
			if keys == nil {
				return cli.Exit("codec-server: no key: give --codec-key-file or set "+codec.KeyEnv, exitInvalid)
			}
			srv, addr, err := serveCodec(keys, c.String("listen"), c.StringSlice("origin"))
			if err != nil {
				return cli.Exit("codec-server: "+err.Error(), exitFailed)
			}
			defer srv.Close()
			fmt.Fprintf(c.App.Writer, "Codec server on http://%s (Web UI: Codec Endpoint). Stop with Ctrl-C.\n", addr)
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
}

// devCodec starts a codec server on loopback for `playbook dev` when it has
// a key, and returns its URL for the Web UI's Codec Endpoint.
func devCodec(c *cli.Context) (endpoint string, stop func(), err error) {
	keys, err := codec.Load(c.String("codec-key-file"))
	if err != nil || keys == nil {
		return "", func() {}, err
	}
	ui := fmt.Sprintf("%d", c.Int("ui-port"))
	srv, addr, err := serveCodec(keys, "127.0.0.1:0", []string{"http://127.0.0.1:" + ui, "http://localhost:" + ui})
	if err != nil {
		return "", nil, err
	}
	return "http://" + addr, func() { srv.Close() }, nil
}
