//go:build !linux

package ipc

import (
	"errors"
	"os"
)

var errNoBusyTable = errors.New("ipc: busy tables need Linux (memfd)")

func newBusyTable() (*BusyTable, *os.File, error) { return nil, nil, errNoBusyTable }

func mapBusyTable(int) (*BusyTable, error) { return nil, errNoBusyTable }
