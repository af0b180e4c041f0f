package commands

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"playbook/internal/codec"
)

// useCodec gives client options the payload codec of a key file, else of
// $PLAYBOOK_CODEC_KEY or $PLAYBOOK_CODEC_KEY_FILE, and says so in the
// client's identity (which workers' pollers show: see checkCodec); without
// a key, nothing.
func useCodec(opts *client.Options, keyFile string) (*codec.AESGCM, error) {
	c, err := codec.Load(keyFile)
	if err != nil || c == nil {
		return nil, err
	}
	opts.DataConverter, opts.FailureConverter = c.DataConverter(), c.FailureConverter()
	opts.Identity = codecIdentity(opts.Identity, c)
	return c, nil
}

// codecKeyFileFlag is the key file that encrypts payloads.
func codecKeyFileFlag(fs *pflag.FlagSet, file *string) {
	fs.StringVar(file, "codec-key-file", "", "encrypt payloads with the AES-256 key in `FILE` (base64 or hex; default $PLAYBOOK_CODEC_KEY, $PLAYBOOK_CODEC_KEY_FILE)")
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

func codecServerCommand() *cobra.Command {
	var (
		keyFile, listen string
		origins         []string
	)
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "serve Temporal's remote codec protocol (/encode, /decode) so the Web UI shows decrypted payloads",
		Long: "Set the Web UI's Codec Endpoint to this server's URL. Anyone who can reach it can decrypt\n" +
			"payloads: bind it to loopback or put it behind your authentication.",
		Args: noArgs,
		RunE: action(func(c *call) error {
			keys, err := codec.Load(keyFile)
			if err != nil {
				return invalid(err)
			}
			if keys == nil {
				return invalidf("no key: give --codec-key-file or set %s", codec.KeyEnv)
			}
			srv, addr, err := serveCodec(keys, listen, origins)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(c.stdout, "Codec server on http://%s (Web UI: Codec Endpoint). Stop with Ctrl-C.\n", addr)
			ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		}),
	}
	fs := cmd.Flags()
	codecKeyFileFlag(fs, &keyFile)
	fs.StringVar(&listen, "listen", "127.0.0.1:8081", "`HOST:PORT` to listen on")
	fs.StringSliceVar(&origins, "origin", []string{"http://127.0.0.1:8233", "http://localhost:8233"}, "Web UI `URL`s allowed to call it from a browser")
	return offline(cmd)
}

// devCodec starts a codec server on loopback for `playbook dev` when it has
// a key, and returns its URL for the Web UI's Codec Endpoint.
func devCodec(keyFile string, uiPort int) (endpoint string, stop func(), err error) {
	keys, err := codec.Load(keyFile)
	if err != nil || keys == nil {
		return "", func() {}, err
	}
	ui := fmt.Sprintf("%d", uiPort)
	srv, addr, err := serveCodec(keys, "127.0.0.1:0", []string{"http://127.0.0.1:" + ui, "http://localhost:" + ui})
	if err != nil {
		return "", nil, err
	}
	return "http://" + addr, func() { srv.Close() }, nil
}
