package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxIncludeDepth bounds nested Include lines (sshd allows 16 too).
const maxIncludeDepth = 16

// maxIncludedFiles bounds the files one configuration may include.
const maxIncludedFiles = 256

// reader carries what reading a file and its includes shares.
type reader struct {
	c       *Config
	fromCmd map[string]bool
	files   int
}

// isInclude reports whether line is an Include line and returns its
// arguments.
func isInclude(line string) (bool, []string, error) {
	word, args, err := ParseLine(line)
	if err != nil || !strings.EqualFold(word, "Include") {
		return false, nil, nil
	}
	if len(args) == 0 {
		return true, nil, errors.New("missing argument")
	}
	return true, args, nil
}

// include reads the files the patterns name, in lexical order per
// pattern, as if their lines stood in place of the Include line. Relative
// patterns are taken from the including file's directory. A pattern that
// matches nothing is not an error (a drop-in directory may be empty); a
// plain path that does not exist is.
func (rd *reader) include(from string, patterns []string, depth int) error {
	if depth >= maxIncludeDepth {
		return fmt.Errorf("Include nested deeper than %d files", maxIncludeDepth)
	}
	for _, p := range patterns {
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(from), p)
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return fmt.Errorf("bad pattern %q: %w", p, err)
		}
		if len(matches) == 0 && !strings.ContainsAny(p, "*?[") {
			return fmt.Errorf("%s: %w", p, os.ErrNotExist)
		}
		for _, m := range matches {
			if err := rd.includeFile(m, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rd *reader) includeFile(path string, depth int) error {
	if rd.files++; rd.files > maxIncludedFiles {
		return fmt.Errorf("more than %d included files", maxIncludedFiles)
	}
	// Stat before opening: opening a FIFO or a terminal could block.
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return rd.read(path, f, depth+1)
}
