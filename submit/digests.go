package submit

import (
	"crypto/sha256"
	"encoding/hex"
	"os"

	"playbook/engine"
	"playbook/spec"
)

// FileDigests digests the files the steps of a playbook read by name, as
// they are now: the scripts their commands and recovery scripts name,
// read from the disk where the playbook is (a word that names no file is
// left out), and the sub-playbooks, from texts (the frozen ones). A run
// records them, so that a retry can tell which of them changed.
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
			if info, err := os.Stat(f); err != nil || !info.Mode().IsRegular() || info.Size() > MaxPlaybookSize*16 {
				continue
			}
			if b, err := os.ReadFile(f); err == nil {
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
