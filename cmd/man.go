package cmd

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date in the man pages' header. It is fixed so that
// `make man` changes the pages only when the commands change (and the
// drift test can compare them); SOURCE_DATE_EPOCH overrides it for
// packagers who stamp their own.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// WriteManPages writes one man page per command of root's tree into dir
// (lockctl.1, lockctl-run.1, lockctl-inspect-locks.1, ...).
func WriteManPages(root *cobra.Command, dir string) error {
	h := &doc.GenManHeader{Title: "LOCKCTL", Section: "1", Source: "lockctl", Manual: "lockctl manual"}
	if os.Getenv("SOURCE_DATE_EPOCH") == "" {
		d := manDate
		h.Date = &d
	}
	return doc.GenManTree(root, h, dir)
}
