package commands

import (
	"fmt"
	"io"

	"playbook/internal/userfile"
)

// printLogFile writes header, then the log file at path as it is read (a
// log may be larger than memory), ending with a newline. A path that is not
// a regular file is refused: a log directory is the worker's, but anyone
// with access to it could put a FIFO or a device there.
func printLogFile(w io.Writer, header, path string) error {
	f, _, err := userfile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return copyStream(w, header, path, f, nil)
}

// copyStream writes header, then r as it is read (a log may be larger than
// memory), ending with a newline; each read first calls beforeRead (nil:
// none). name is what a read error names.
func copyStream(w io.Writer, header, name string, r io.Reader, beforeRead func()) error {
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	last := byte('\n')
	buf := make([]byte, 64<<10)
	for {
		if beforeRead != nil {
			beforeRead()
		}
		n, err := r.Read(buf)
		if n > 0 {
			last = buf[n-1]
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if last != '\n' {
		_, err := io.WriteString(w, "\n")
		return err
	}
	return nil
}
