// Package codec encrypts every payload playbook sends to Temporal (workflow
// input, activity inputs and results, queries, failures' messages) with
// AES-256-GCM, so that histories and the Web UI hold ciphertext; and serves
// Temporal's remote codec protocol so that the Web UI can show them decoded
// to people who can reach the codec server.
package codec

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"playbook/internal/userfile"
)

// The environment variables a key comes from, for workers and the CLI alike.
const (
	KeyEnv     = "PLAYBOOK_CODEC_KEY"      // the key itself, base64 or hex
	KeyFileEnv = "PLAYBOOK_CODEC_KEY_FILE" // a file holding it
)

// MaxKeyFileSize bounds a key file: a key is 32 bytes, 64 characters in
// hex.
const MaxKeyFileSize = 4 << 10

// Payload metadata of an encrypted payload.
const (
	encoding       = "binary/encrypted"
	metaEncoding   = "encoding"
	metaKeyID      = "encryption-key-id"
	maxRequestBody = 4 << 20 // a codec request: a few payloads under Temporal's 2 MB limit
)

// Encrypted says whether a payload is one an AESGCM codec encrypted.
func Encrypted(p *commonpb.Payload) bool { return string(p.GetMetadata()[metaEncoding]) == encoding }

// Unreadable says whether err is a client's failure to decode an encrypted
// payload: it has no key (the SDK's converter knows no such encoding), or
// another (Decode's word).
func Unreadable(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "encoding "+encoding+":") || strings.Contains(err.Error(), errOtherKey))
}

// Why says, of err that Unreadable, why the client could not decrypt: it
// has no codec key, or another (Decode's words, which name both keys).
func Why(err error) string {
	if _, other, ok := strings.Cut(err.Error(), errOtherKey); ok {
		other, _, _ = strings.Cut(other, "\n")
		return errOtherKey + other
	}
	return "it has no codec key"
}

// KeyHint says how to give a client that could not decrypt a payload the
// key: the end of its error.
const KeyHint = "give it the workers' key ($" + KeyFileEnv + " or $" + KeyEnv + ")"

// errForeignKey stops the walk of UnreadableKey at the first payload c
// cannot decrypt.
var errForeignKey = errors.New("a payload of another key")

// UnreadableKey is the ID of the key that encrypted a payload of m (a
// history, say) that c cannot decrypt, c nil being no key; "" when c can
// decrypt them all. A replay fed such payloads fails, and its error would
// read like a divergence.
func UnreadableKey(m proto.Message, c *AESGCM) string {
	var id string
	_ = proxy.VisitPayloads(context.Background(), m, proxy.VisitPayloadsOptions{
		Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
			for _, p := range ps {
				if Encrypted(p) && (c == nil || string(p.GetMetadata()[metaKeyID]) != c.keyID) {
					id = string(p.GetMetadata()[metaKeyID])
					return ps, errForeignKey
				}
			}
			return ps, nil
		},
		SkipSearchAttributes: true,
	})
	return id
}

// errOtherKey starts Decode's error for a payload another key encrypted.
const errOtherKey = "payload encrypted with key "

// AESGCM is a converter.PayloadCodec: it encrypts each payload whole
// (metadata and data) and leaves payloads it did not encrypt as they are,
// so that runs started before a key was set still read.
type AESGCM struct {
	aead  cipher.AEAD
	keyID string
}

// New returns the codec for a 32-byte key.
func New(key []byte) (*AESGCM, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("codec key: %d bytes, need 32 (AES-256)", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(key)
	return &AESGCM{aead: aead, keyID: hex.EncodeToString(sum[:4])}, nil
}

// KeyID names the key without revealing it (the first 4 bytes of its
// SHA-256, in hex): each payload it encrypts carries it, and so does the
// identity of a worker that uses it.
func (c *AESGCM) KeyID() string { return c.keyID }

// Encode implements converter.PayloadCodec.
func (c *AESGCM) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, c.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{metaEncoding: []byte(encoding), metaKeyID: []byte(c.keyID)},
			Data:     c.aead.Seal(nonce, nonce, plain, nil),
		}
	}
	return out, nil
}

// Decode implements converter.PayloadCodec.
func (c *AESGCM) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[metaEncoding]) != encoding {
			out[i] = p
			continue
		}
		if id := string(p.GetMetadata()[metaKeyID]); id != c.keyID {
			return nil, fmt.Errorf(errOtherKey+"%s, this key is %s", id, c.keyID)
		}
		n := c.aead.NonceSize()
		if len(p.GetData()) < n {
			return nil, errors.New("encrypted payload too short")
		}
		plain, err := c.aead.Open(nil, p.GetData()[:n], p.GetData()[n:], nil)
		if err != nil {
			return nil, fmt.Errorf("decrypting a payload: %w", err)
		}
		out[i] = &commonpb.Payload{}
		if err := out[i].Unmarshal(plain); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ParseKey reads a key written as base64 or hex (surrounding space ignored),
// or as 32 raw bytes.
func ParseKey(b []byte) ([]byte, error) {
	if len(b) == 32 {
		return b, nil
	}
	s := strings.TrimSpace(string(b))
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == 32 {
		return k, nil
	}
	if k, err := hex.DecodeString(s); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, errors.New("codec key: write 32 bytes as base64 or hex (e.g. `openssl rand -base64 32`)")
}

// StdinKey, as a key file's name, reads the key from standard input, once:
// a service manager running as root opens a key file only root may read
// and hands it to a worker running as another user (docs/SECURITY.md,
// Keeping the key from steps).
const StdinKey = "-"

// stdinKey reads the key from standard input, then puts /dev/null in its
// place: the key's file is no longer open in the process.
var stdinKey = sync.OnceValues(func() ([]byte, error) {
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		return nil, errors.New("standard input is a terminal: give the key on it (< codec.key)")
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, MaxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	if len(b) > MaxKeyFileSize {
		return nil, fmt.Errorf("standard input holds more than the %d bytes of a codec key", MaxKeyFileSize)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	if err := unix.Dup3(int(null.Fd()), 0, 0); err != nil {
		return nil, fmt.Errorf("closing standard input: %w", err)
	}
	return b, nil
})

// Load returns the codec for a key file, else for $PLAYBOOK_CODEC_KEY, else
// for the file in $PLAYBOOK_CODEC_KEY_FILE; nil when none is set. The file
// "-" (StdinKey) is standard input.
func Load(file string) (*AESGCM, error) {
	var raw []byte
	readKey := func(file, from string) error {
		read := func() ([]byte, error) { return userfile.Read(file, MaxKeyFileSize, "a codec key") }
		if file == StdinKey {
			read = stdinKey
		}
		b, err := read()
		if err != nil {
			return fmt.Errorf("codec key file %s%s: %w", userfile.Show(file), from, err)
		}
		raw = b
		return nil
	}
	switch {
	case file != "":
		if err := readKey(file, ""); err != nil {
			return nil, err
		}
	case os.Getenv(KeyEnv) != "":
		raw = []byte(os.Getenv(KeyEnv))
	case os.Getenv(KeyFileEnv) != "":
		if err := readKey(os.Getenv(KeyFileEnv), " ($"+KeyFileEnv+")"); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	key, err := ParseKey(raw)
	if err != nil {
		return nil, err
	}
	return New(key)
}

// DataConverter is the SDK's default converter with payloads encrypted by c.
func (c *AESGCM) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter also encrypts failures' messages and stack traces,
// which would otherwise sit in the history in plain text.
func (c *AESGCM) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: c.DataConverter(), EncodeCommonAttributes: true,
	})
}

// Handler serves Temporal's remote codec protocol (POST .../encode and
// .../decode, payloads as JSON), with the CORS answers a browser needs when
// the Web UI at one of origins calls it.
func (c *AESGCM) Handler(origins []string) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(c)
	allowed := map[string]bool{}
	for _, o := range origins {
		allowed[strings.TrimSuffix(o, "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			if !allowed[origin] && !allowed["*"] {
				http.Error(w, "origin not allowed", http.StatusForbidden)
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Allow-Credentials", "true")
			w.Header().Set("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			w.WriteHeader(http.StatusOK)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
		codec.ServeHTTP(w, r)
	})
}
