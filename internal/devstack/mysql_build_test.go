package devstack

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The server is built from the checkout the starter was built from, else
// from the one the demo runs in; anywhere else the demo says what to do.
func TestFindModule(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mysqld := filepath.Join(root, "internal", "devstack", "mysqld")
	elsewhere := t.TempDir()

	got, err := findModule(root, elsewhere)
	require.NoError(t, err)
	require.Equal(t, mysqld, got, "the build directory")

	got, err = findModule("", filepath.Join(root, "internal", "app"))
	require.NoError(t, err)
	require.Equal(t, mysqld, got, "a directory inside the checkout")

	_, err = findModule(elsewhere, elsewhere)
	require.ErrorContains(t, err, "MYSQL_DSN")
}
