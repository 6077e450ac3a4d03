package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxIncludeDepth bounds nested Include lines (sshd allows 16 too).
const maxIncludeDepth = 16

// maxIncludedFiles bounds the files one configuration may include.
const maxIncludedFiles = 256

// include reads the files the patterns name, in lexical order per
// pattern, as if their lines stood in place of the Include line, under
// the Match conditions of that line. A Match inside an included file ends
// with that file, as in sshd. Relative patterns are taken from the
// including file's directory. A pattern that matches nothing is not an
// error (a drop-in directory may be empty); a plain path that does not
// exist is, and so is a file that includes itself.
func (rd *reader) include(from string, patterns []string, conds []*matchLine) error {
	if len(rd.stack) > maxIncludeDepth {
		return fmt.Errorf("Include nested deeper than %d files", maxIncludeDepth)
	}
	for _, p := range patterns {
		if p == "" {
			return fmt.Errorf("empty file name")
		}
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
			if err := rd.includeFile(m, conds); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rd *reader) includeFile(path string, conds []*matchLine) error {
	if rd.files++; rd.files > maxIncludedFiles {
		return fmt.Errorf("more than %d included files", maxIncludedFiles)
	}
	if err := rd.checkLoop(path); err != nil {
		return err
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
	return rd.read(path, f, conds)
}

// checkLoop refuses a file that is already being read (an Include loop),
// naming the chain.
func (rd *reader) checkLoop(path string) error {
	id := fileID(path)
	for i, f := range rd.stack {
		if fileID(f) == id {
			chain := append(append([]string{}, rd.stack[i:]...), path)
			return fmt.Errorf("Include loop: %s", strings.Join(chain, " includes "))
		}
	}
	return nil
}

// fileID identifies a file across spellings of its path.
func fileID(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if p, err := filepath.Abs(path); err == nil {
		return p
	}
	return path
}
