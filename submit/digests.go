package submit

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"playbook/internal/userfile"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// FileDigests digests the files the steps of a playbook run, as they are
// now: the scripts their commands and recovery scripts run
// (spec.ScriptsRun: never a file a command only writes or mentions) and
// the files they declare they read (`reads`), read from the disk where the
// playbook is (a word that names no file is left out), and the sub-playbooks, from texts (the frozen ones). A run records
// them, so that a retry can tell which of them changed.
func FileDigests(pb *spec.Playbook, baseDir string, texts map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range pb.Steps {
		for _, f := range engine.FilesRead(s, baseDir, texts) {
			if _, done := out[f]; done {
				continue
			}
			if text, ok := texts[f]; ok {
				out[f] = digest([]byte(text))
				continue
			}
			// A regular file, read without blocking (a FIFO or a device is
			// left out, as a word that names no file is), whatever its
			// size: a file a step declares it reads may be a large one.
			if d, err := fileDigest(f); err == nil {
				out[f] = d
			}
		}
	}
	return out
}

// Digest is the digest of a file's text, as FileDigests records it.
func Digest(text string) string { return digest([]byte(text)) }

// fileDigest is the digest of the regular file at path, as digest gives
// it for its text.
func fileDigest(path string) (string, error) {
	f, _, err := userfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
