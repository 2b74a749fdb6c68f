package limit_test

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

var srv *redistest.Server

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m, nil, &srv)) }
