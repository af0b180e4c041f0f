package submit

import (
	"crypto/sha256"
	"encoding/hex"

	"playbook/internal/userfile"
	"playbook/interpreter/engine"
	"playbook/interpreter/spec"
)

// FileDigests digests the files the steps of a playbook run, as they are
// now: the scripts their commands and recovery scripts run
// (spec.ScriptsRun: never a file a command only writes or mentions), read
// from the disk where the playbook is (a word that names no file is left
// out), and the sub-playbooks, from texts (the frozen ones). A run records
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
			// A regular file within its bound, read without blocking (a FIFO
			// or a device is left out, as a word that names no file is).
			if b, err := userfile.Read(f, MaxPlaybookSize*16, "a script"); err == nil {
				out[f] = digest(b)
			}
		}
	}
	return out
}

// Digest is the digest of a file's text, as FileDigests records it.
func Digest(text string) string { return digest([]byte(text)) }

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
