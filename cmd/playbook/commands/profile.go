package commands

import (
	"errors"
	"io/fs"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"playbook/internal/userfile"
)

// maxSettingsFile bounds the Temporal config file and each TLS file it
// names: a certificate chain or a key is a few KiB.
const maxSettingsFile = 1 << 20

// clientSettings are the client options envconfig gives (the config file's
// profile, then TEMPORAL_* variables), and the remote codec the profile
// names, if any.
type clientSettings struct {
	opts client.Options
	// codecEndpoint is the profile's codec endpoint (codec.endpoint,
	// TEMPORAL_CODEC_ENDPOINT): the namespace's payloads are encoded.
	codecEndpoint string
}

// loadClientSettings is envconfig's LoadClientOptions, with the files it
// reads read as every file a user names is (userfile): the config file and
// the TLS certificates and key it names must be regular files within
// maxSettingsFile, or the command is refused (exit 2) naming the file.
func (a *app) loadClientSettings() (clientSettings, error) {
	path := os.Getenv("TEMPORAL_CONFIG_FILE")
	if path == "" {
		path = envconfig.DefaultConfigFilePath()
	}
	// An empty TOML text, never no text: envconfig would read the file itself.
	data := []byte("\n")
	from := "" // the file the settings come from, for messages
	if path != "" {
		b, err := userfile.Read(path, maxSettingsFile, "a Temporal config file")
		switch {
		case err == nil:
			data, from = append(b, '\n'), " ("+userfile.Show(path)+")"
		case !errors.Is(err, fs.ErrNotExist):
			return clientSettings{}, invalidf("Temporal config file %s: %v", userfile.Show(path), err)
		}
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFileData: data, ConfigFileProfile: a.conn.profile,
	})
	if err != nil {
		// A profile that is not there, a file that is not TOML: usage.
		return clientSettings{}, invalidf("client settings%s: %v", from, err)
	}
	if tls := prof.TLS; tls != nil {
		for _, f := range []struct {
			path *string
			data *[]byte
			what string
		}{
			{&tls.ClientCertPath, &tls.ClientCertData, "a TLS client certificate"},
			{&tls.ClientKeyPath, &tls.ClientKeyData, "a TLS client key"},
			{&tls.ServerCACertPath, &tls.ServerCACertData, "a TLS server CA certificate"},
		} {
			if *f.path == "" || len(*f.data) > 0 {
				continue // none, or both: envconfig says which is wrong
			}
			b, err := userfile.Read(*f.path, maxSettingsFile, f.what)
			if err != nil {
				return clientSettings{}, invalidf("%s %s: %v", f.what, userfile.Show(*f.path), err)
			}
			*f.path, *f.data = "", b
		}
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return clientSettings{}, invalidf("client settings: %v", err)
	}
	s := clientSettings{opts: opts}
	if prof.Codec != nil {
		s.codecEndpoint = prof.Codec.Endpoint
	}
	return s, nil
}
